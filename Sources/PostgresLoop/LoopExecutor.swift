import HTTP
import HTTPServer
import Postgres

/// The executor of a request answered on its event loop: reads go out on the loop's pipelined
/// connection at once, writes with the loop's next batch, and each completion runs on the loop.
/// What a pipeline cannot do (no connection open, a statement that failed for the connection's
/// sake, a transaction) hands the request to the worker pool, where it runs again from the start
/// with a `PooledExecutor`; the completion is then never called.
public struct LoopExecutor: QueryExecutor {
    let pipelines: Pipelines
    let responder: Responder

    public func read<Row>(_ query: PreparedQuery<Row>, _ completion: @escaping (Result<[Row], any Error>) -> Void) {
        pipelines.read(query.statement, query.binds, for: responder) { result in
            completion(result.mapError { $0 }.flatMap { rows in Result { try query.rows(rows) } })
        }
    }

    public func write<Row>(
        _ query: PreparedQuery<Row>, lockOrder: String,
        _ completion: @escaping (Result<[Row], any Error>) -> Void
    ) {
        pipelines.write(query.statement, query.binds, lockOrder: lockOrder, for: responder) { result in
            completion(result.mapError { $0 }.flatMap { rows in Result { try query.rows(rows) } })
        }
    }

    public func transaction<Value>(
        _ body: @escaping (PostgresConnection) throws -> Value,
        _ completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        pipelines.statistics.fallBack(responder)
    }
}

@available(*, unavailable, message: "an executor belongs to its request's event loop")
extension LoopExecutor: Sendable {}

/// A handler whose statements run through a `QueryExecutor`, written once for both ways they may
/// run. It answers exactly once through `respond`, now or from a completion; an error thrown by
/// the answer's closure is mapped to its problem response like a blocking handler's.
public typealias DatabaseHandler =
    @Sendable (
        Request, RequestContext, any QueryExecutor,
        _ respond: @escaping (() throws -> Response) -> Void
    ) -> Void

/// How the routes of `DatabaseHandler`s run: on the event loops through `pipelines` when set,
/// with the worker pool as their fallback, or on the worker pool alone.
public struct DatabaseRouting: Sendable {
    public let pool: PostgresPool
    public let pipelines: Pipelines?

    public init(pool: PostgresPool, pipelines: Pipelines?) {
        self.pool = pool
        self.pipelines = pipelines
    }

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
        return { request, context, responder in
            guard request.body.count <= DatabaseRouting.largestLoopBody else { return pipelines.statistics.fallBack(responder) }
            handler(request, context, LoopExecutor(pipelines: pipelines, responder: responder)) { responder.respond($0) }
        }
    }
}

extension Router {
    /// A route whose handler runs its statements through a `QueryExecutor`: see `DatabaseRouting`.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, admission: Admission? = nil, on database: DatabaseRouting,
        _ handler: @escaping DatabaseHandler
    ) {
        add(method, pattern, admission: admission, database.blocking(handler), asynchronous: database.asynchronous(handler))
    }
}
