import LoopInterface
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
    let loop: any LoopScheduler

    public init(pipelines: Pipelines, pool: PostgresPool, loop: any LoopScheduler) {
        self.pipelines = pipelines
        self.pool = pool
        self.loop = loop
    }

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
    /// on this loop; `WorkersBusy` at once when the worker pool's queue is full (the API answers
    /// it `503 overloaded`, as any request the workers cannot take).
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
        if !queued { completion(.failure(WorkersBusy())) }
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

/// The worker pool's queue was full: a statement or transaction of a request answered on an event
/// loop could not be handed to it.
public struct WorkersBusy: Error, Sendable {
    public init() {}
}
