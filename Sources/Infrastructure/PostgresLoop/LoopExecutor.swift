import LoopInterface
import Postgres
import Threads

/// The executor of a request whose task runs on its event loop: reads go out on the loop's
/// pipelined connection at once, writes with the loop's next batch, and the task resumes on the
/// loop when the answer is in. What a pipeline cannot do (no connection open, a statement that
/// could not run there, a transaction) runs on a pooled connection on the worker pool, and the
/// task resumes on its loop all the same: the handler goes on from where it was and runs once,
/// whatever path its statements take.
public struct LoopExecutor: QueryExecutor {
    let pipelines: Pipelines
    let pool: PostgresPool
    let loop: any LoopScheduler

    public init(pipelines: Pipelines, pool: PostgresPool, loop: any LoopScheduler) {
        self.pipelines = pipelines
        self.pool = pool
        self.loop = loop
    }

    public func read<Row>(_ query: PreparedQuery<Row>) async throws -> [Row] {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresRows, any Error>) in
            pipelines.read(
                query.statement, query.binds, on: loop,
                notRun: { offload({ try $0.query(query.statement, query.binds) }, { continuation.resume(with: $0) }) }
            ) { continuation.resume(with: $0.mapError { $0 }) }
        }.decoded(by: query)
    }

    public func write<Row>(_ query: PreparedQuery<Row>, lockOrder: String) async throws -> [Row] {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresRows, any Error>) in
            pipelines.write(
                query.statement, query.binds, lockOrder: lockOrder, on: loop,
                notRun: { offload({ try $0.query(query.statement, query.binds) }, { continuation.resume(with: $0) }) }
            ) { continuation.resume(with: $0.mapError { $0 }) }
        }.decoded(by: query)
    }

    public func transaction<Value>(_ body: @escaping (PostgresConnection) throws -> Value) async throws -> Value {
        let handoff = LoopHandoff(work: body)
        return try await withCheckedThrowingContinuation { continuation in
            offload({ try $0.withTransaction(handoff.work) }) { continuation.resume(with: $0.map(LoopHandoff<Value>.Outcome.init)) }
        }.value
    }

    /// Runs `work` on a pooled connection on the worker pool, under the request's deadline, and
    /// hands its result to `completion` there (the request's task then resumes on its loop);
    /// `WorkersBusy` at once when the worker pool's queue is full (the API answers it `503
    /// overloaded`, as any request the workers cannot take).
    private func offload<Value>(
        _ work: @escaping @Sendable (PostgresConnection) throws -> Value,
        _ completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) {
        pipelines.statistics.offloaded.add(1, ordering: .relaxed)
        let (pool, deadline) = (pool, RequestDeadline.current)
        let queued = loop.offload {
            completion(Result { try RequestDeadline.with(deadline) { try pool.withConnection(work) } })
        }
        if !queued { completion(.failure(WorkersBusy())) }
    }
}

extension PostgresRows {
    /// Decoded on the loop, as a pipeline's rows are.
    fileprivate func decoded<Row>(by query: PreparedQuery<Row>) throws -> [Row] { try query.rows(self) }
}

/// A transaction's body and value on their way to a worker and back: never used on two threads
/// at once (the request's task waits while the worker runs it).
private struct LoopHandoff<Value>: @unchecked Sendable {
    let work: (PostgresConnection) throws -> Value

    struct Outcome: @unchecked Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
}

@available(*, unavailable, message: "an executor belongs to its request's event loop")
extension LoopExecutor: Sendable {}

/// The worker pool's queue was full: a statement or transaction of a request answered on an event
/// loop could not be handed to it.
public struct WorkersBusy: Error, Sendable {
    public init() {}
}
