/// Runs the statements of one request, without the code that asks knowing how: on a pooled
/// connection, blocking the calling thread (`PooledExecutor`), or on an event loop's pipelined
/// connection, answering later on that loop (`LoopExecutor` in `PostgresLoop`). A handler and a
/// service written against it are written once for both.
///
/// Every completion is called at most once. An executor may also never call it: the pipelined
/// one hands the whole request to the worker pool when it cannot run a statement (no connection,
/// or a transaction, which a pipeline does not hold open), and the request starts again there
/// with a `PooledExecutor`. So nothing before a statement may have effects that must not repeat.
public protocol QueryExecutor {
    /// A read, safe to run again.
    func read<Row>(_ query: PreparedQuery<Row>, _ completion: @escaping (Result<[Row], any Error>) -> Void)

    /// One statement that writes, committed on its own before `completion` is called. `lockOrder`
    /// names the row it locks: a pipeline sends the writes of a batch in that order, so that two
    /// batches cannot deadlock.
    func write<Row>(
        _ query: PreparedQuery<Row>, lockOrder: String,
        _ completion: @escaping (Result<[Row], any Error>) -> Void)

    /// Several statements in one transaction on a connection of their own: committed when `body`
    /// returns, rolled back when it throws.
    func transaction<Value>(
        _ body: @escaping (PostgresConnection) throws -> Value,
        _ completion: @escaping (Result<Value, any Error>) -> Void)
}

/// The blocking executor: each statement on a connection of the pool, on the calling thread, and
/// every completion called before the method returns.
public struct PooledExecutor: QueryExecutor {
    public let pool: PostgresPool

    public init(_ pool: PostgresPool) {
        self.pool = pool
    }

    public func read<Row>(_ query: PreparedQuery<Row>, _ completion: @escaping (Result<[Row], any Error>) -> Void) {
        completion(Result { try pool.withConnection { try $0.query(query) } })
    }

    public func write<Row>(
        _ query: PreparedQuery<Row>, lockOrder: String,
        _ completion: @escaping (Result<[Row], any Error>) -> Void
    ) {
        completion(Result { try pool.withConnection { try $0.query(query) } })
    }

    public func transaction<Value>(
        _ body: @escaping (PostgresConnection) throws -> Value,
        _ completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        completion(Result { try pool.withTransaction(body) })
    }

    /// Runs continuation-passing work that uses this executor and returns what it completed with:
    /// with a `PooledExecutor` every completion runs before its call returns.
    public func wait<Value>(_ work: (PooledExecutor, @escaping (Result<Value, any Error>) -> Void) -> Void) throws -> Value {
        var outcome: Result<Value, any Error>?
        work(self) { outcome = $0 }
        guard let outcome else {
            throw PostgresError(code: .invalidUsage, context: "the work did not complete on the calling thread")
        }
        return try outcome.get()
    }
}
