import CLibPQ
import Threads

/// A connection in libpq's non-blocking pipeline mode, for an event loop: statements go out without
/// waiting for the ones before them, their results come back in order, and no call here blocks.
///
/// The owner drives it from one thread:
/// - `send` queues a statement (libpq buffers it);
/// - `sync` ends the batch and pushes it to the server: call it once per loop wake-up, so that
///   the statements of one wake-up share one write and the server answers them together;
/// - `readable` and `writable` when the socket is ready; `wantsWrite` says whether libpq still
///   holds bytes the socket did not take.
///
/// The statements of one batch (between two `sync`s) run in one implicit transaction, committed at
/// the sync. A statement that fails aborts the rest of its batch: they fail with
/// `statementAborted`, and nothing of them happened. Each statement's completion runs from
/// `readable` (or from `close`), in the order they were sent, and may send again; a `durable`
/// statement's completion waits for its batch's commit, so that a write is reported only once it
/// is committed.
///
/// Connecting blocks: open it off the loop.
public final class PostgresPipeline {
    public typealias Completion = (Result<PostgresRows, PostgresError>) -> Void

    /// What the server still owes a result for, in sending order.
    private enum Pending {
        /// Forgotten again if the server refuses to prepare it.
        case prepare(PostgresStatement)
        case statement(Completion, durable: Bool)
        case sync
    }

    private let connection: PostgresConnection
    private var queue: [Pending] = []
    private var head = 0
    /// Statements sent since the last `sync`.
    private var unsynced = 0
    /// The head statement's outcome, kept until libpq's NULL ends it.
    private var outcome: Result<PostgresRows, PostgresError>?
    /// Durable statements that have their outcome and wait for their batch's commit.
    private var committing: [(Completion, Result<PostgresRows, PostgresError>)] = []
    /// Whether a statement of the batch being read failed: the batch is then rolled back.
    private var batchFailed = false
    /// When each batch still unanswered was synced (monotonic nanoseconds), oldest first.
    private var syncedAt: [UInt64] = []
    /// Whether libpq holds bytes the socket has not taken yet.
    public private(set) var wantsWrite = false
    /// Set once the connection failed or was closed; every later `send` throws.
    public private(set) var isBroken = false
    /// Why it broke (for the log).
    public private(set) var brokenBy: PostgresError?

    /// Connects, blocking, then switches the connection to non-blocking pipeline mode.
    public init(configuration: PostgresConfiguration) throws {
        // Statements are prepared by name, and several batches are in flight: neither survives a
        // pooler that lends the server connection per transaction (pgbouncer 1.18 lent it away at a
        // pipeline's first sync; see PoolerTests).
        guard configuration.pooler != .transaction else {
            throw PostgresError(code: .invalidConfiguration, context: "a pipeline cannot work behind a pooler in transaction mode")
        }
        connection = try PostgresConnection(configuration: configuration)
        guard PQsetnonblocking(connection.handle, 1) == 0, PQenterPipelineMode(connection.handle) == 1 else {
            throw PostgresError(code: .connectionFailed, context: connection.errorMessage)
        }
        socket = PQsocket(connection.handle)
    }

    deinit {
        close()
    }

    /// The socket to watch; it stays open until `close`, even once the pipeline is broken, so that
    /// the owner can stop watching it first.
    public let socket: Int32

    /// Statements sent whose completions have not run yet.
    public var pendingCount: Int {
        committing.count + queue[head...].reduce(0) { count, entry in if case .statement = entry { count + 1 } else { count } }
    }

    /// Queues a fixed statement. Throws at once (the completion is dropped) when the connection is
    /// broken or the parameters cannot be sent; otherwise `completion` runs later with the rows or
    /// the statement's error, after the batch's commit when `durable` (a commit that fails, or a
    /// connection lost before the commit is confirmed, then fails it with `connectionFailed`).
    public func send(
        _ statement: PostgresStatement, _ binds: PostgresBindings, durable: Bool = false,
        completion: @escaping Completion
    ) throws(PostgresError) {
        guard !isBroken else { throw PostgresError(code: .connectionFailed, context: "the pipeline is closed") }
        if let problem = binds.encodingProblem { throw PostgresError(code: .encodingFailed, context: problem) }
        let handle = connection.handle
        let name: String
        if let prepared = connection.fixedStatement(statement) {
            guard binds.matches(prepared.types) else {
                throw PostgresError(code: .invalidUsage, context: "a pipelined statement keeps the parameter types of its first use")
            }
            name = prepared.name
        } else {
            // Prepared in the same batch, just ahead of its first execution.
            name = statement.preparedName
            let types = binds.entries.map { Oid($0.type.rawValue) }
            guard PQsendPrepare(handle, name, statement.sql, Int32(types.count), types) == 1 else {
                throw retire()
            }
            queue.append(.prepare(statement))
            connection.recordFixedStatement(statement, types: binds.entries.map(\.type))
        }
        let sent = connection.withParameters(binds) { values, lengths, formats in
            PQsendQueryPrepared(handle, name, Int32(binds.entries.count), values, lengths, formats, 0)
        }
        guard sent == 1 else { throw retire() }
        queue.append(.statement(completion, durable: durable))
        unsynced += 1
    }

    /// Ends the batch of statements sent since the last call and pushes it towards the server.
    public func sync() {
        guard unsynced > 0, !isBroken else { return }
        unsynced = 0
        guard PQpipelineSync(connection.handle) == 1 else {
            fail(failure())
            return
        }
        queue.append(.sync)
        syncedAt.append(monotonicNanoseconds())
        flush()
    }

    /// Gives up on the connection when the server has left a batch unanswered for longer than
    /// `timeout` nanoseconds (frozen, partitioned away): every pending statement fails with
    /// `timedOut` (a durable one may or may not have committed), the server is asked to cancel,
    /// and the pipeline is broken. Call it now and then, say once per loop wake-up.
    public func expire(timeout: UInt64, now: UInt64 = monotonicNanoseconds()) {
        guard !isBroken, let oldest = syncedAt.first, now &- oldest > timeout else { return }
        fail(PostgresError(code: .timedOut, context: "no answer from the server within \(timeout / 1_000_000) ms"))
        // The socket stays open until `close`, after the owner stopped watching it.
        connection.sendCancel()
    }

    /// The socket took bytes: send more of what libpq holds.
    public func writable() {
        guard !isBroken else { return }
        flush()
    }

    /// The socket has bytes (or hung up): reads them and runs the completions of the statements
    /// whose results are complete.
    public func readable() {
        guard !isBroken else { return }
        guard PQconsumeInput(connection.handle) == 1 else {
            fail(failure())
            return
        }
        let handle = connection.handle
        while head < queue.count, !isBroken, PQisBusy(handle) == 0 {
            let result = PQgetResult(handle)
            if case .sync = queue[head] {
                // A sync point's result has no NULL after it.
                guard let result else { break }
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_SYNC {
                    PQclear(result)
                    pop()
                    if !syncedAt.isEmpty { syncedAt.removeFirst() }
                    // The batch is over: committed, or rolled back if one of its statements failed.
                    let ended = committing
                    let rolledBack = batchFailed
                    committing = []
                    batchFailed = false
                    for (completion, outcome) in ended {
                        if rolledBack, case .success = outcome {
                            completion(.failure(PostgresError(code: .statementAborted, context: "a later statement of its batch failed")))
                        } else {
                            completion(outcome)
                        }
                    }
                    continue
                }
                let error = connection.makeError(result)
                PQclear(result)
                fail(error)
                return
            }
            if let result {
                // A statement's result(s); its end is the NULL that follows.
                let status = PQresultStatus(result)
                if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                    if outcome == nil { outcome = .success(PostgresRows(result: PostgresResult(result))) } else { PQclear(result) }
                } else if status == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                    batchFailed = true
                    outcome = .failure(PostgresError(code: .statementAborted, context: "an earlier statement of its batch failed"))
                } else {
                    let error = connection.makeError(result)
                    PQclear(result)
                    if connection.isBroken {
                        fail(error)
                        return
                    }
                    batchFailed = true
                    outcome = .failure(error)
                }
                continue
            }
            let entry = pop()
            let finished = outcome ?? .failure(PostgresError(code: .queryFailed, context: "the statement returned no result"))
            outcome = nil
            switch entry {
            case .statement(let completion, let durable):
                if durable { committing.append((completion, finished)) } else { completion(finished) }
            case .prepare(let statement):
                // Refused (its first execution fails as aborted): the next use prepares it again.
                if case .failure = finished { connection.forgetFixedStatement(statement) }
            case .sync:
                break
            }
        }
        if !isBroken, PQstatus(handle) != CONNECTION_OK { fail(failure()) }
        if !isBroken, wantsWrite { flush() }
    }

    /// Closes the connection (and its socket); the statements still pending complete with
    /// `connectionFailed`.
    public func close() {
        if !isBroken { fail(PostgresError(code: .connectionFailed, context: "the pipeline was closed")) }
        connection.close()
    }

    // MARK: - Internals

    private func flush() {
        let status = PQflush(connection.handle)
        if status < 0 {
            fail(failure())
        } else {
            wantsWrite = status == 1
        }
    }

    @discardableResult
    private func pop() -> Pending {
        let entry = queue[head]
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
        return entry
    }

    private func failure() -> PostgresError {
        PostgresError(code: .connectionFailed, context: connection.errorMessage)
    }

    /// A send that libpq refused leaves the connection in doubt: fail what is pending and return
    /// the error to throw.
    private func retire() -> PostgresError {
        let error = failure()
        fail(error)
        return error
    }

    /// Marks the pipeline broken and fails every pending statement; the socket stays open until `close`.
    private func fail(_ error: PostgresError) {
        var error = error
        if error.code != .timedOut { error.code = .connectionFailed }
        isBroken = true
        brokenBy = error
        wantsWrite = false
        let pending = queue[head...]
        let uncommitted = committing
        queue = []
        head = 0
        outcome = nil
        committing = []
        syncedAt = []
        batchFailed = false
        for (completion, _) in uncommitted { completion(.failure(error)) }
        for case .statement(let completion, _) in pending { completion(.failure(error)) }
    }
}

@available(*, unavailable, message: "a pipeline belongs to the thread (event loop) that drives it")
extension PostgresPipeline: Sendable {}
