import HTTP
import HTTPServer
import Postgres

/// The executor of a request answered on its event loop: reads go out on the loop's pipelined
/// connection at once, writes with the loop's next batch, and each completion runs on the loop.
/// What a pipeline cannot do (no connection open, a statement that could not run there, a
/// transaction) runs on a pooled connection on the worker pool, and its completion comes back
/// to the loop: the handler goes on from where it was and runs once, whatever path its
/// statements take.
public struct LoopExecutor: QueryExecutor {
    let pipelines: Pipelines
    let pool: PostgresPool
    let loop: LoopContext

    public func read<Row>(_ query: PreparedQuery<Row>, _ completion: @escaping (Result<[Row], any Error>) -> Void) {
        let decoded = LoopExecutor.decoding(query, completion)
        pipelines.read(query.statement, query.binds, on: loop, notRun: { offload({ try $0.query(query.statement, query.binds) }, decoded) }) {
            decoded($0.mapError { $0 })
        }
    }

    public func write<Row>(
        _ query: PreparedQuery<Row>, lockOrder: String,
        _ completion: @escaping (Result<[Row], any Error>) -> Void
    ) {
        let decoded = LoopExecutor.decoding(query, completion)
        pipelines.write(
            query.statement, query.binds, lockOrder: lockOrder, on: loop,
            notRun: { offload({ try $0.query(query.statement, query.binds) }, decoded) }
        ) { decoded($0.mapError { $0 }) }
    }

    public func transaction<Value>(
        _ body: @escaping (PostgresConnection) throws -> Value,
        _ completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        offload({ try $0.withTransaction(body) }, completion)
    }

    /// The completion of raw rows: decoded on the loop, as a pipeline's are.
    private static func decoding<Row>(
        _ query: PreparedQuery<Row>, _ completion: @escaping (Result<[Row], any Error>) -> Void
    ) -> (Result<PostgresRows, any Error>) -> Void {
        { result in completion(result.flatMap { rows in Result { try query.rows(rows) } }) }
    }

    /// Runs `work` on a pooled connection on the worker pool and hands its result to `completion`
    /// on this loop; `503 overloaded` at once when the worker pool's queue is full, as for any
    /// request the workers cannot take.
    private func offload<Value>(
        _ work: @escaping (PostgresConnection) throws -> Value, _ completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        pipelines.statistics.offloaded.add(1, ordering: .relaxed)
        // The request's closures cross to a worker and back, but are never used on two threads
        // at once: the handler waits for this completion, which runs on the loop once `work`
        // has returned on the worker.
        let handoff = LoopHandoff(work: work, completion: completion)
        let (pool, loop) = (pool, loop)
        let queued = loop.offload {
            let result = LoopHandoff<Value>.Outcome(result: Result { try pool.withConnection(handoff.work) })
            loop.execute { handoff.completion(result.result) }
        }
        if !queued { completion(.failure(Problem.serviceUnavailable())) }
    }
}

/// A request's work and completion on their way to a worker and back to the loop (see `offload`).
private struct LoopHandoff<Value>: @unchecked Sendable {
    let work: (PostgresConnection) throws -> Value
    let completion: (Result<Value, any Error>) -> Void

    /// What `work` returned, on its way back to the loop.
    struct Outcome: @unchecked Sendable {
        let result: Result<Value, any Error>
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

/// How the routes of `DatabaseHandler`s run: on the event loops through `pipelines` when set (a
/// body too large to parse on a loop goes to the worker pool before the handler starts), or on
/// the worker pool alone.
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
        return { [pool] request, context, responder in
            guard request.body.count <= DatabaseRouting.largestLoopBody else { return pipelines.statistics.fallBack(responder) }
            handler(request, context, LoopExecutor(pipelines: pipelines, pool: pool, loop: responder.loop)) { responder.respond($0) }
        }
    }
}

extension Router {
    /// A route whose handler runs its statements through a `QueryExecutor`: see `DatabaseRouting`.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, policy: RoutePolicy = .open, admission: Admission? = nil,
        on database: DatabaseRouting, _ handler: @escaping DatabaseHandler
    ) {
        add(
            method, pattern, policy: policy, admission: admission, database.blocking(handler),
            asynchronous: database.asynchronous(handler))
    }
}
