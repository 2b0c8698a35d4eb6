import LoopInterface
import StructuredLogging
import Postgres
import Synchronization
import Threads

/// The statements run from the event loops: each loop keeps one pipelined PostgreSQL connection,
/// opened on first use by a background thread. While a loop has none (opening, or the database
/// restarting), or when a statement could not run there, the statement is handed back
/// (`notRun`), and `LoopExecutor` runs it on a pooled connection on the worker pool instead: the
/// request's handler goes on from where it was, it never starts again. Handlers reach it through
/// `LoopExecutor`.
///
/// Reads go out as they come and end their batch when the loop's wake-up ends. Writes wait for
/// the end of the wake-up, then go out together in a batch of their own, ordered by the row they
/// lock (so that two loops' batches cannot deadlock), and are committed together: one disk flush
/// for all of them. Each is reported once its batch is committed.
public struct Pipelines: Sendable {
    /// The name pipelined connections show in `pg_stat_activity`.
    public static let applicationName = "exosphere-pipeline"
    let configuration: PostgresConfiguration
    let logger: Logger
    public let statistics = Statistics()

    /// Counters for metrics, shared by every loop.
    public final class Statistics: Sendable {
        /// Statements sent on a pipeline (reads and writes).
        public let sent = Atomic<Int>(0)
        /// Statements and transactions of requests answered on the loops that ran on a pooled
        /// connection on the worker pool: no pipeline open, a statement that could not run on it,
        /// or a transaction.
        public let offloaded = Atomic<Int>(0)
        /// Pipelines open now.
        public let open = Atomic<Int>(0)
    }

    public init(configuration: PostgresConfiguration, logger: Logger) {
        var configuration = configuration
        configuration.applicationName = Pipelines.applicationName
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs a read on `loop`'s pipeline and hands the rows to `answer`, or `timedOut` when the
    /// database stopped answering (the workers' connections would wait as long). Without an open
    /// pipeline (which starts opening one, after a back-off once one failed), or when the
    /// statement fails otherwise, `notRun` is called instead: a read is safe to run again.
    func read(
        _ statement: PostgresStatement, _ binds: PostgresBindings, on loop: any LoopScheduler, notRun: @escaping () -> Void,
        _ answer: @escaping (Result<PostgresRows, PostgresError>) -> Void
    ) {
        guard let pipeline = database(loop).pipeline() else { return notRun() }
        do {
            try pipeline.send(statement, binds) { result in
                switch result {
                case .success:
                    answer(result)
                case .failure(let error) where error.code == .timedOut:
                    answer(result)
                case .failure:
                    notRun()
                }
            }
            statistics.sent.add(1, ordering: .relaxed)
        } catch {
            notRun()
        }
    }

    /// Runs a write in `loop`'s next batch of writes and hands its outcome to `answer` once the
    /// batch is committed: the rows, the statement's own error, or `connectionFailed` when the
    /// commit is not confirmed (answer 503: it may or may not have happened). When the write did
    /// not run at all (no pipeline open, or its batch rolled back by another statement), `notRun`
    /// is called instead. `lockOrder` names the row the statement locks.
    func write(
        _ statement: PostgresStatement, _ binds: PostgresBindings, lockOrder: String, on loop: any LoopScheduler,
        notRun: @escaping () -> Void, _ answer: @escaping (Result<PostgresRows, PostgresError>) -> Void
    ) {
        let database = database(loop)
        guard database.pipeline() != nil else { return notRun() }
        database.write(
            LoopDatabase.Write(statement: statement, binds: binds, lockOrder: lockOrder) { outcome in
                if case .failure(let error) = outcome,
                    error.code == .statementAborted || error.code == .encodingFailed
                        || error.code == .invalidUsage
                {
                    return notRun()
                }
                answer(outcome)
            })
    }

    private func database(_ loop: any LoopScheduler) -> LoopDatabase {
        loop.local { LoopDatabase(configuration: configuration, logger: logger, loop: loop, statistics: statistics) }
    }
}

/// One event loop's pipelined connection and its life: closed, opening, open, and closed again
/// when it breaks. Used on its loop's thread only; the opening thread hands its result over with
/// `LoopScheduler.execute`.
final class LoopDatabase: LoopSource, @unchecked Sendable {
    private enum State {
        case closed(retryAt: UInt64)
        case opening
        case open(PostgresPipeline)
        case ended
    }

    /// A pipeline on its way from the thread that opened it to the loop that uses it.
    private struct Handoff: @unchecked Sendable {
        let pipeline: PostgresPipeline
    }

    /// A write waiting for the end of the wake-up.
    struct Write {
        let statement: PostgresStatement
        let binds: PostgresBindings
        let lockOrder: String
        let completion: PostgresPipeline.Completion
    }

    /// Completions to run from the loop's task queue rather than from where they failed, which
    /// may be too late in a wake-up for what they send to go out.
    private struct Deferred: @unchecked Sendable {
        let completions: [PostgresPipeline.Completion]
    }

    /// The wait before opening again after a failure or a loss: 100 ms, doubling with each failed
    /// attempt up to 5 s.
    private static let firstRetryNanoseconds: UInt64 = 100_000_000
    private static let lastRetryNanoseconds: UInt64 = 5_000_000_000
    private var retryNanoseconds = LoopDatabase.firstRetryNanoseconds
    private let configuration: PostgresConfiguration
    private let logger: Logger
    private let loop: any LoopScheduler
    private let statistics: Pipelines.Statistics
    private var state = State.closed(retryAt: 0)
    private var writes: [Write] = []
    /// Set when the loop ends, read by an opening thread that finishes afterwards.
    private let ended = Atomic<Bool>(false)

    init(configuration: PostgresConfiguration, logger: Logger, loop: any LoopScheduler, statistics: Pipelines.Statistics) {
        self.configuration = configuration
        self.logger = logger
        self.loop = loop
        self.statistics = statistics
    }

    func pipeline() -> PostgresPipeline? {
        switch state {
        case .open(let pipeline):
            return pipeline
        case .closed(let retryAt):
            if monotonicNanoseconds() >= retryAt { open() }
            return nil
        case .opening, .ended:
            return nil
        }
    }

    private func open() {
        state = .opening
        let configuration = configuration
        OSThread(name: "db-pipeline-\(loop.index)") { [self] in
            let result: Result<Handoff, Error>
            do {
                result = .success(Handoff(pipeline: try PostgresPipeline(configuration: configuration)))
            } catch {
                result = .failure(error)
            }
            if ended.load(ordering: .acquiring) { return }
            loop.execute { [self] in opened(result) }
        }.detach()
    }

    private func opened(_ result: Result<Handoff, Error>) {
        guard case .opening = state else {
            if case .success(let handoff) = result { handoff.pipeline.close() }
            return
        }
        do {
            let pipeline = try result.get().pipeline
            state = .open(pipeline)
            try loop.watch(self)
            statistics.open.add(1, ordering: .relaxed)
            retryNanoseconds = LoopDatabase.firstRetryNanoseconds
        } catch {
            if case .open(let pipeline) = state { pipeline.close() }
            state = .closed(retryAt: monotonicNanoseconds() + retryNanoseconds)
            retryNanoseconds = min(2 * retryNanoseconds, LoopDatabase.lastRetryNanoseconds)
            logger.warning("pipelined database connection failed", ["event_loop": String(loop.index), "error": String(reflecting: error)])
        }
    }

    func write(_ write: Write) {
        writes.append(write)
    }

    /// Sends the wake-up's writes in a batch of their own, in lock order.
    private func sendWrites(_ pipeline: PostgresPipeline) {
        guard !writes.isEmpty else { return }
        let batch = writes.sorted { $0.lockOrder < $1.lockOrder }
        writes = []
        var unsent: [PostgresPipeline.Completion] = []
        for write in batch {
            do {
                try pipeline.send(write.statement, write.binds, durable: true, completion: write.completion)
                statistics.sent.add(1, ordering: .relaxed)
            } catch {
                unsent.append(write.completion)
            }
        }
        pipeline.sync()
        failLater(unsent)
    }

    /// Fails writes that were never sent with `statementAborted` (so their requests go to the
    /// workers), from the loop's next turn.
    private func failLater(_ completions: [PostgresPipeline.Completion]) {
        guard !completions.isEmpty else { return }
        let deferred = Deferred(completions: completions)
        loop.execute {
            for completion in deferred.completions {
                completion(.failure(PostgresError(code: .statementAborted, context: "the write was not sent")))
            }
        }
    }

    /// Stops watching and closes a pipeline that broke; the next read opens another.
    private func closeIfBroken() {
        guard case .open(let pipeline) = state, pipeline.isBroken else { return }
        failLater(writes.map(\.completion))
        writes = []
        loop.unwatch(self)
        pipeline.close()
        statistics.open.subtract(1, ordering: .relaxed)
        state = .closed(retryAt: monotonicNanoseconds() + retryNanoseconds)
        logger.warning(
            "pipelined database connection lost",
            ["event_loop": String(loop.index), "error": pipeline.brokenBy.map { String(reflecting: $0) } ?? "-"])
    }

    // MARK: - LoopSource

    var fileDescriptor: Int32 {
        if case .open(let pipeline) = state { return pipeline.socket }
        return -1
    }

    var wantsWrite: Bool {
        if case .open(let pipeline) = state { return pipeline.wantsWrite }
        return false
    }

    func readable() {
        guard case .open(let pipeline) = state else { return }
        pipeline.readable()
        closeIfBroken()
    }

    func writable() {
        guard case .open(let pipeline) = state else { return }
        pipeline.writable()
        closeIfBroken()
    }

    func wakeUpEnded() {
        guard case .open(let pipeline) = state else { return }
        // The reads' batch ends first: no read sees a write before it is committed.
        pipeline.sync()
        sendWrites(pipeline)
        // A loop wakes at least every 250 ms, so a frozen server is noticed within that of the timeout.
        if let timeout = configuration.responseTimeout {
            pipeline.expire(
                timeout: UInt64(timeout.components.seconds) * 1_000_000_000
                    + UInt64(timeout.components.attoseconds / 1_000_000_000))
        }
        closeIfBroken()
    }

    func loopEnded() {
        ended.store(true, ordering: .releasing)
        if case .open(let pipeline) = state {
            pipeline.close()
            statistics.open.subtract(1, ordering: .relaxed)
        }
        state = .ended
    }
}
