import HTTP
import HTTPServer
import Postgres
import PostgresLoop
import Synchronization

/// A handler whose statements run through a `QueryExecutor`, written once for both ways they may
/// run. It answers exactly once through `respond`, now or from a completion; an error thrown by
/// the answer's closure is mapped to its problem response like a blocking handler's.
typealias DatabaseHandler =
    @Sendable (
        Request, RequestContext, any QueryExecutor,
        _ respond: @escaping (() throws -> Response) -> Void
    ) -> Void

/// How the routes of `DatabaseHandler`s run: on the event loops through `pipelines` when set (a
/// body too large to parse on a loop goes to the worker pool before the handler starts), or on
/// the worker pool alone.
struct DatabaseRouting: Sendable {
    let pool: PostgresPool
    let pipelines: Pipelines?

    /// The blocking handler of `handler`, for the worker pool: with a `PooledExecutor` every
    /// completion, and so the answer, comes before it returns.
    func blocking(_ handler: @escaping DatabaseHandler) -> Router.Handler {
        { [pool] request, context in
            var answer: Result<Response, any Error>?
            handler(request, context, PooledExecutor(pool)) { body in answer = Result { try body() } }
            guard let answer else { throw PostgresError(code: .invalidUsage, context: "the handler did not answer") }
            return try answer.get()
        }
    }

    /// The largest body parsed on an event loop; larger ones are parsed on the workers.
    static let largestLoopBody = 64 * 1024

    /// The event-loop handler of `handler`, nil without pipelines.
    func asynchronous(_ handler: @escaping DatabaseHandler) -> Router.AsynchronousHandler? {
        guard let pipelines else { return nil }
        return { [pool] request, context, responder in
            guard request.body.count <= DatabaseRouting.largestLoopBody else {
                pipelines.statistics.fallbacks.add(1, ordering: .relaxed)
                return responder.fallBack()
            }
            handler(request, context, LoopExecutor(pipelines: pipelines, pool: pool, loop: responder.loop)) { responder.respond($0) }
        }
    }
}

extension Router {
    /// A route whose handler runs its statements through a `QueryExecutor`: see `DatabaseRouting`.
    mutating func add(
        _ method: HTTPMethod, _ pattern: String, policy: RoutePolicy = .open, admission: Admission? = nil,
        on database: DatabaseRouting, _ handler: @escaping DatabaseHandler
    ) {
        add(
            method, pattern, policy: policy, admission: admission, database.blocking(handler),
            asynchronous: database.asynchronous(handler))
    }
}

/// The worker pool's queue was full when a request answered on an event loop needed it.
extension WorkersBusy: HTTPResponseError {
    public var problem: Problem { .serviceUnavailable() }
}
