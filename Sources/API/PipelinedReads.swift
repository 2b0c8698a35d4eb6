import HTTPServer
import Logging
import Postgres
import Synchronization
import Threads

/// The database reads answered on the event loops: each loop keeps one pipelined PostgreSQL
/// connection, opened on first use by a background thread. While a loop has none (opening, or
/// the database restarting), `pipeline(on:)` is nil and the request falls back to the worker pool.
struct PipelinedReads: Sendable {
    /// The name pipelined connections show in `pg_stat_activity`.
    static let applicationName = "exosphere-pipeline"
    let configuration: PostgresConfiguration
    let logger: Logger
    let statistics = Statistics()

    /// Counters for metrics, shared by every loop.
    final class Statistics: Sendable {
        /// Statements sent on a pipeline.
        let sent = Atomic<Int>(0)
        /// Requests handed to the worker pool: no pipeline open, or the statement failed.
        let fallbacks = Atomic<Int>(0)
        /// Pipelines open now.
        let open = Atomic<Int>(0)
    }

    init(configuration: PostgresConfiguration, logger: Logger) {
        var configuration = configuration
        configuration.applicationName = PipelinedReads.applicationName
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs a read for `responder`'s request on its loop's pipeline and hands the rows to `answer`.
    /// Without an open pipeline (at most once a second per loop, that starts opening one), or when
    /// the statement fails, the request goes to the route's blocking handler on the worker pool:
    /// a read is safe to run again.
    func query(_ statement: PostgresStatement, _ binds: PostgresBindings, for responder: Responder,
               _ answer: @escaping (PostgresRows) -> Void) {
        let statistics = statistics
        guard let pipeline = responder.loop.local({
            LoopDatabase(configuration: configuration, logger: logger, loop: responder.loop, statistics: statistics)
        }).pipeline() else {
            statistics.fallbacks.add(1, ordering: .relaxed)
            return responder.fallBack()
        }
        do {
            try pipeline.send(statement, binds) { result in
                switch result {
                case .success(let rows):
                    answer(rows)
                case .failure:
                    statistics.fallbacks.add(1, ordering: .relaxed)
                    responder.fallBack()
                }
            }
            statistics.sent.add(1, ordering: .relaxed)
        } catch {
            statistics.fallbacks.add(1, ordering: .relaxed)
            responder.fallBack()
        }
    }
}

/// One event loop's pipelined connection and its life: closed, opening, open, and closed again
/// when it breaks. Used on its loop's thread only; the opening thread hands its result over with
/// `LoopContext.execute`.
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

    private static let retryNanoseconds: UInt64 = 1_000_000_000
    private let configuration: PostgresConfiguration
    private let logger: Logger
    private let loop: LoopContext
    private let statistics: PipelinedReads.Statistics
    private var state = State.closed(retryAt: 0)
    /// Set when the loop ends, read by an opening thread that finishes afterwards.
    private let ended = Atomic<Bool>(false)

    init(configuration: PostgresConfiguration, logger: Logger, loop: LoopContext, statistics: PipelinedReads.Statistics) {
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
        } catch {
            if case .open(let pipeline) = state { pipeline.close() }
            state = .closed(retryAt: monotonicNanoseconds() + LoopDatabase.retryNanoseconds)
            logger.warning("pipelined database connection failed", ["event_loop": String(loop.index), "error": String(reflecting: error)])
        }
    }

    /// Stops watching and closes a pipeline that broke; the next read opens another.
    private func closeIfBroken() {
        guard case .open(let pipeline) = state, pipeline.isBroken else { return }
        loop.unwatch(self)
        pipeline.close()
        statistics.open.subtract(1, ordering: .relaxed)
        state = .closed(retryAt: monotonicNanoseconds() + LoopDatabase.retryNanoseconds)
        logger.warning("pipelined database connection lost", ["event_loop": String(loop.index)])
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
        pipeline.sync()
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
