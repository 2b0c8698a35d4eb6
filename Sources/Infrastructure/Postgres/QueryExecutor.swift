/// Runs the statements of one request, without the code that asks knowing how: on a pooled
/// connection, blocking the calling thread (`PooledExecutor`, for a request that runs on the
/// worker pool), or on an event loop's pipelined connection, the request's task resuming on that
/// loop when the answer is in (`LoopExecutor` in `PostgresLoop`). A handler and a service written
/// against it are written once for both, and run once, on one path.
public protocol QueryExecutor {
    /// A read, safe to run again.
    func read<Row>(_ query: PreparedQuery<Row>) async throws -> [Row]

    /// One statement that writes, committed on its own before it returns. `lockOrder` names the
    /// row it locks: a pipeline sends the writes of a batch in that order, so that two batches
    /// cannot deadlock.
    func write<Row>(_ query: PreparedQuery<Row>, lockOrder: String) async throws -> [Row]

    /// Several statements in one transaction on a connection of their own: committed when `body`
    /// returns, rolled back when it throws.
    func transaction<Value>(_ body: @escaping (PostgresConnection) throws -> Value) async throws -> Value
}

/// The blocking executor: each statement on a connection of the pool, on the calling thread (a
/// worker's: it never suspends).
public struct PooledExecutor: QueryExecutor {
    public let pool: PostgresPool

    public init(_ pool: PostgresPool) {
        self.pool = pool
    }

    public func read<Row>(_ query: PreparedQuery<Row>) async throws -> [Row] {
        try pool.withConnection { try $0.query(query) }
    }

    public func write<Row>(_ query: PreparedQuery<Row>, lockOrder: String) async throws -> [Row] {
        try pool.withConnection { try $0.query(query) }
    }

    public func transaction<Value>(_ body: @escaping (PostgresConnection) throws -> Value) async throws -> Value {
        try pool.withTransaction(body)
    }
}
