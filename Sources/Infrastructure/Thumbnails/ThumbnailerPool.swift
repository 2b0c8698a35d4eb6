import CLinux
import Glibc
import StructuredLogging
import Threads

/// A small pool of `exosphere-thumbnailer` helper processes: the only place images are decoded,
/// and the only executable that loads libvips (the serving process never maps it).
///
/// Each helper decodes one image, over a socket pair (its stdin and stdout), and is then ended:
/// no helper ever holds two images, so a decoder taken over by a crafted file sees no other
/// user's original and cannot touch another image's thumbnails; nor can it see the server's files
/// (its root is an empty file system of its own, `Sandbox`, checked once by `start`). Helpers are
/// started ahead of need: besides the `helpers` at work, as many wait idle, loaded and confined, and
/// one is started each time one is taken, so that an image never waits for a helper to start
/// (about 0.1 s: some 100 libraries to load). Background work (a thumbnail made ahead of any
/// request) takes no idle helper: it starts its own at a lower priority, so that on a busy machine
/// it takes only the CPU that requests leave. What a helper answers is checked against what it
/// was asked (the renditions, their sizes and formats); the request gets an answer:
/// - killed by a signal other than `SIGPROF`/`SIGXCPU`: tried once more on a fresh helper, since
///   the helper may have died of something else than the file; a second such death is `undecodable`;
/// - `SIGPROF` or `SIGXCPU`: the file made the decoder spend its whole CPU allowance (counted for
///   this image alone): `undecodable`;
/// - an answer that is not what was asked: `undecodable` (the file took the decoder over);
/// - the wall-clock deadline passed without the allowance spent (a machine too busy to give the
///   helper its CPU), a helper that exits without a signal twice, every helper busy with
///   `queueLimit` requests waiting, or none free within the deadline: `ThumbnailsUnavailable` (a
///   `503` with `Retry-After`), a verdict never remembered.
public final class ThumbnailerPool: Sendable {
    /// `name` in the directory of the running executable (`/proc/self/exe`), where the release
    /// build and the container put the helper.
    public static func besideThisExecutable(_ name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return name }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return name }
        return String(path[...slash]) + name
    }

    public struct Configuration: Sendable {
        /// The helper executable: `exosphere-thumbnailer` beside the running binary by default.
        public var executable = ThumbnailerPool.besideThisExecutable("exosphere-thumbnailer")
        /// How many helpers decode at once (and how many more wait, started ahead of need).
        public var helpers = 2
        /// The wall-clock deadline of one image, and of waiting for a free helper.
        public var deadlineSeconds = 10.0
        /// The CPU seconds one image may use (`RLIMIT_CPU`).
        public var cpuSeconds = 5
        /// The largest `width × height` a helper decodes; checked from the header first.
        public var maxPixels = 100_000_000
        /// A helper's address space (`RLIMIT_AS`), in MiB.
        public var memoryLimitMB = 1024
        /// Requests that may wait for a helper.
        public var queueLimit = 64
        /// The niceness of a helper at background work (`render(background: true)`, thumbnails made
        /// ahead of a request): it takes the CPU that requests leave, however many come.
        public var backgroundNiceness: Int32 = 10
        /// How many times `deadlineSeconds` background work may take: nobody waits for it, and a
        /// busy machine gives a lowered helper little of its time.
        public var backgroundDeadlineFactor = 6.0
        /// Whether helpers install their seccomp filter.
        public var seccomp = true
        /// Whether helpers must hide the server's files from themselves (`required`: the server
        /// does not start where they cannot), may run with what can be hidden (`best-effort`, a
        /// warning at start), or hide nothing (`off`).
        public var isolation = Isolation.required
        /// More arguments for `exosphere-thumbnailer` (tests: `--simulate-compromise KIND`).
        public var helperArguments: [String] = []

        public init() {}
    }

    /// How much of the server's file system a helper must hide (`exosphere-thumbnailer --isolation`).
    public enum Isolation: String, Sendable, CaseIterable {
        case required
        case bestEffort = "best-effort"
        case off
    }

    /// Why the pool could not start: its helpers cannot start, or cannot hide the server's files
    /// while that is required.
    public struct StartFailure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Counts for `/metrics`.
    public struct Statistics: Sendable, Hashable {
        public var made = 0
        public var undecodable = 0
        /// Helpers that died or were killed (each is replaced).
        public var helperDeaths = 0
        public var timeouts = 0
        public var unavailable = 0
    }

    public let configuration: Configuration
    private let logger: Logger
    private let lock = ConditionLock()
    /// Helpers started ahead of need, none of which has seen an image.
    private nonisolated(unsafe) var idle: [Helper] = []
    /// Helpers being started for `idle` (outside the lock).
    private nonisolated(unsafe) var starting = 0
    /// Places at work taken by a request that starts its own helper (none was idle).
    private nonisolated(unsafe) var reserved = 0
    private nonisolated(unsafe) var waiting = 0
    private nonisolated(unsafe) var stopped = false
    private nonisolated(unsafe) var busy: Set<Int32> = []
    private nonisolated(unsafe) var counts = Statistics()

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts one helper with `--check-isolation` (it confines itself as for an image and says how
    /// it hid the server's files), then `helpers` idle helpers ahead of need. Throws when the check
    /// fails, or when the files stay visible and `isolation` is `required`; logs a warning when
    /// they stay visible under `best-effort`. What the helpers' isolation is.
    @discardableResult
    public func start() throws(StartFailure) -> String {
        let report: String
        do {
            report = try Helper.checkIsolation(configuration)
        } catch {
            throw StartFailure(description: "thumbnail helpers cannot start: \(error)")
        }
        if report.hasPrefix("visible") {
            let reason = String(report.dropFirst("visible ".count))
            guard configuration.isolation != .required else {
                throw StartFailure(
                    description:
                        "thumbnail helpers cannot hide the server's files from a decoder (\(reason)): allow unprivileged user namespaces, "
                        + "run the server as root or with CAP_SYS_ADMIN, or start it with --thumbnail-isolation best-effort")
            }
            logger.warning("thumbnail helpers can see the server's files", ["isolation": reason])
        } else {
            logger.info("thumbnail helpers started", ["isolation": report, "helpers": String(configuration.helpers)])
        }
        refill()
        return report
    }

    public var statistics: Statistics { lock.withLock { counts } }

    /// The process ids of the helpers decoding right now (for tests and diagnostics).
    public var busyHelperPIDs: [Int32] { lock.withLock { Array(busy) } }

    /// Makes `job` from `original` on a helper, waiting for one if all are busy. A file that
    /// crashes or stalls the decoder is `.undecodable` like one the decoder refuses. `background`
    /// work (nobody waits for it) runs at `backgroundNiceness`, with a longer deadline.
    public func render(_ job: ThumbnailJob, original: UnsafeRawBufferPointer, background: Bool = false) throws(ThumbnailsUnavailable)
        -> ThumbnailOutcome
    {
        var job = job
        job.maxPixels = min(job.maxPixels, configuration.maxPixels)
        job.cpuSeconds = configuration.cpuSeconds
        let frame = ThumbnailWire.encode(job, original: original)
        let seconds = configuration.deadlineSeconds * (background ? configuration.backgroundDeadlineFactor : 1)
        for attempt in 1...2 {
            let helper = try checkOut(lowered: background)
            let result = helper.exchange(frame, deadline: monotonicNanoseconds() + UInt64(seconds * 1e9))
            switch result {
            case .answered(let outcome):
                _ = retire(helper, answered: true)
                if let mismatch = Self.mismatch(outcome, job) {
                    count { $0.undecodable += 1 }
                    logger.error("a thumbnail helper answered what it was not asked", ["pid": String(helper.pid), "reason": mismatch])
                    return .undecodable("the decoder's answer was not the rendition asked for")
                }
                count { if case .made = outcome { $0.made += 1 } else { $0.undecodable += 1 } }
                return outcome
            case .died:
                let signal = retire(helper)
                count { $0.helperDeaths += 1 }
                logger.warning("a thumbnail helper died", ["pid": String(helper.pid), "signal": String(signal ?? 0), "attempt": String(attempt)])
                if signal == SIGPROF || signal == SIGXCPU {
                    count { $0.undecodable += 1 }
                    return .undecodable("decoding used the whole CPU allowance of \(configuration.cpuSeconds) s")
                }
                if attempt == 2 {
                    guard signal != nil else {
                        // Exited on its own (it could not set up, say): nothing says the file is at fault.
                        count { $0.unavailable += 1 }
                        throw ThumbnailsUnavailable("thumbnail helpers exit before answering")
                    }
                    count { $0.undecodable += 1 }
                    return .undecodable("the decoder crashed on this file twice")
                }
            case .timedOut:
                _ = retire(helper)
                count {
                    $0.helperDeaths += 1
                    $0.timeouts += 1
                    $0.unavailable += 1
                }
                // Its CPU allowance (a profiling timer) would have ended it had the file made it
                // spin: the machine did not give it the time. Try again later, blame nothing.
                logger.warning("a thumbnail helper missed its deadline and was killed", ["pid": String(helper.pid)])
                throw ThumbnailsUnavailable("decoding took longer than \(seconds) s on a busy machine")
            case .malformed(let reason):
                _ = retire(helper)
                count { $0.helperDeaths += 1 }
                logger.error("a thumbnail helper answered nonsense and was killed", ["pid": String(helper.pid), "reason": reason])
                return .undecodable("the decoder failed on this file")
            }
        }
        return .undecodable("unreachable")
    }

    /// Why an answer is not the one `job` asked for, if it is not: the renditions asked, in
    /// order, each within its size and in its format (by the bytes' signature).
    static func mismatch(_ outcome: ThumbnailOutcome, _ job: ThumbnailJob) -> String? {
        guard case .made(let renditions, let placeholders) = outcome else { return nil }
        guard renditions.map(\.spec) == job.renditions else { return "renditions \(renditions.map(\.spec)), asked \(job.renditions)" }
        for rendition in renditions {
            let size = rendition.spec.size
            guard (1...size).contains(rendition.width), (1...size).contains(rendition.height) else {
                return "\(rendition.width)×\(rendition.height) for \(rendition.spec)"
            }
            let bytes = rendition.bytes
            let signed: Bool
            switch rendition.spec.format {
            case .webp: signed = bytes.count > 12 && bytes[0..<4].elementsEqual("RIFF".utf8) && bytes[8..<12].elementsEqual("WEBP".utf8)
            case .jpeg: signed = bytes.starts(with: [0xFF, 0xD8, 0xFF])
            }
            guard signed else { return "bytes that are not \(rendition.spec.format) for \(rendition.spec)" }
        }
        if job.placeholders != (placeholders != nil) { return "placeholders \(placeholders != nil), asked \(job.placeholders)" }
        return nil
    }

    /// Stops every idle helper (closing its socket ends it) and makes later requests `unavailable`;
    /// helpers at work finish their image first.
    public func shutdown() {
        let helpers = lock.withLock {
            stopped = true
            lock.broadcast()
            defer { idle = [] }
            return idle
        }
        for helper in helpers { helper.stop() }
    }

    // MARK: - Helpers in and out

    private func count(_ change: (inout Statistics) -> Void) { lock.withLock { change(&counts) } }

    /// A helper for one image. A `lowered` one is started for it and lowered to
    /// `backgroundNiceness` at once, before it has loaded its libraries (a tenth of a second of
    /// CPU) and before it counts as busy. A fresh helper per image: lowering it lasts for this
    /// image only, and the CPU allowance (RLIMIT_CPU) counts CPU time, so a lowered helper is not
    /// blamed for the wait.
    private func checkOut(lowered: Bool) throws(ThumbnailsUnavailable) -> Helper {
        let deadline = monotonicNanoseconds() + UInt64(configuration.deadlineSeconds * 1e9)
        lock.lock()
        var failure: ThumbnailsUnavailable?
        var helper: Helper?
        var spawn = false
        if waiting >= configuration.queueLimit, busy.count >= configuration.helpers {
            failure = ThumbnailsUnavailable("\(waiting) images are waiting for a thumbnail helper")
        }
        waiting += 1
        while failure == nil, helper == nil, !spawn {
            if stopped {
                failure = ThumbnailsUnavailable("the server is shutting down")
            } else if busy.count + reserved < configuration.helpers {
                // Background work starts a helper of its own, lowered as it loads its libraries,
                // and leaves the idle ones to requests.
                if !lowered, let free = idle.popLast() {
                    helper = free
                } else {
                    // None ready (before `start`, or all taken faster than they start): start one here.
                    reserved += 1
                    spawn = true
                }
            } else if !lock.wait(untilMonotonicNanoseconds: deadline) {
                failure = ThumbnailsUnavailable("no thumbnail helper was free within \(configuration.deadlineSeconds) s")
            }
        }
        waiting -= 1
        if let helper { busy.insert(helper.pid) }
        lock.unlock()
        if let failure {
            count { $0.unavailable += 1 }
            throw failure
        }
        if let helper {
            refill()
            return helper
        }
        do {
            let started = try Helper.start(configuration)
            if lowered, configuration.backgroundNiceness > 0 {
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(started.pid), configuration.backgroundNiceness)
            }
            lock.withLock {
                reserved -= 1
                busy.insert(started.pid)
            }
            refill()
            return started
        } catch {
            lock.withLock {
                reserved -= 1
                lock.signal()
            }
            logger.error("a thumbnail helper could not be started", ["error": "\(error)"])
            count { $0.unavailable += 1 }
            throw ThumbnailsUnavailable("no thumbnail helper could be started")
        }
    }

    /// Starts helpers until `helpers` of them wait idle (counting those starting), outside the
    /// lock: each is a `posix_spawn` (about a millisecond here) and loads its libraries while
    /// others decode.
    private func refill() {
        while true {
            let more = lock.withLock {
                guard !stopped, idle.count + starting < configuration.helpers else { return false }
                starting += 1
                return true
            }
            guard more else { return }
            let fresh: Helper
            do {
                fresh = try Helper.start(configuration)
            } catch {
                lock.withLock { starting -= 1 }
                logger.error("a thumbnail helper could not be started", ["error": "\(error)"])
                return
            }
            let kept = lock.withLock {
                starting -= 1
                defer { lock.signal() }
                guard !stopped else { return false }
                idle.append(fresh)
                return true
            }
            if !kept { fresh.stop() }
        }
    }

    /// Ends a helper after its one image (killed and reaped: the signal that ended it, if one
    /// did), which frees its place for the next image, on a helper started ahead of need.
    private func retire(_ helper: Helper, answered: Bool = false) -> Int32? {
        var signal: Int32?
        if answered { helper.end() } else { signal = helper.kill() }
        lock.withLock {
            busy.remove(helper.pid)
            lock.signal()
        }
        return signal
    }
}

/// One helper process and the server's end of its socket pair.
final class Helper: @unchecked Sendable {
    let pid: pid_t
    let socket: Int32

    enum Exchange {
        case answered(ThumbnailOutcome)
        /// The helper closed its end: it died, of this signal if known.
        case died(Int32?)
        case timedOut
        case malformed(String)
    }

    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    private init(pid: pid_t, socket: Int32) {
        self.pid = pid
        self.socket = socket
    }

    /// Runs a helper with `--check-isolation` and returns its one line (`hidden HOW`, `visible
    /// WHY` or `off`), read within the configured deadline.
    static func checkIsolation(_ configuration: ThumbnailerPool.Configuration) throws -> String {
        let helper = try start(configuration, checkingIsolation: true)
        let deadline = monotonicNanoseconds() + UInt64(configuration.deadlineSeconds * 1e9)
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while !answer.contains(UInt8(ascii: "\n")), answer.count < 4096 {
            let count = chunk.withUnsafeMutableBytes { recv(helper.socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                answer += chunk[..<count]
            } else if count < 0, errno == EAGAIN || errno == EINTR {
                guard helper.wait(for: Int16(POLLIN), until: deadline) else { break }
            } else {
                break
            }
        }
        let status = helper.exitStatus()
        guard let line = String(validating: answer, as: UTF8.self)?.split(separator: "\n").first.map(String.init) else {
            throw StartFailure(description: "\(configuration.executable) --check-isolation said nothing (\(status))")
        }
        return line
    }

    static func start(_ configuration: ThumbnailerPool.Configuration, checkingIsolation: Bool = false) throws -> Helper {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw StartFailure(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        defer { close(pair[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The server blocks signals in some threads; a helper starts with none blocked and every
        // signal at its default action, so SIGTERM, SIGPIPE and SIGXCPU end it.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var arguments = ["exosphere-thumbnailer", "--thumbnail-memory-mb", String(configuration.memoryLimitMB)]
        if !configuration.seccomp { arguments.append("--no-seccomp") }
        arguments += ["--isolation", configuration.isolation.rawValue]
        if checkingIsolation { arguments.append("--check-isolation") }
        arguments += configuration.helperArguments
        // One arena per thread would reserve 64 MiB of address space each against RLIMIT_AS.
        let environment = ["MALLOC_ARENA_MAX=2", "VIPS_WARNING=0", "PATH=/usr/bin:/bin"]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, configuration.executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            close(pair[0])
            throw StartFailure(description: "posix_spawn \(configuration.executable): \(String(cString: strerror(status)))")
        }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        return Helper(pid: pid, socket: pair[0])
    }

    /// Sends one request and reads its answer, both within `deadline` (monotonic nanoseconds).
    func exchange(_ frame: [UInt8], deadline: UInt64) -> Exchange {
        var sent = 0
        let sendResult: Exchange? = frame.withUnsafeBytes { bytes in
            while sent < bytes.count {
                let count = send(socket, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                if count > 0 {
                    sent += count
                } else if count < 0, errno == EAGAIN || errno == EINTR {
                    if !wait(for: Int16(POLLOUT), until: deadline) { return .timedOut }
                } else {
                    return .died(nil)
                }
            }
            return nil
        }
        if let sendResult { return sendResult }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                answer.append(contentsOf: chunk[..<count])
                guard answer.count <= ThumbnailWire.maxFrameBytes else { return .malformed("an answer over the frame limit") }
                do {
                    if let outcome = try ThumbnailWire.decodeAnswer(answer) { return .answered(outcome) }
                } catch {
                    return .malformed(error.description)
                }
            } else if count == 0 {
                return .died(nil)
            } else if errno == EAGAIN || errno == EINTR {
                if !wait(for: Int16(POLLIN), until: deadline) { return .timedOut }
            } else {
                return .died(nil)
            }
        }
    }

    func wait(for events: Int16, until deadline: UInt64) -> Bool {
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { return false }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let milliseconds = Int32(min(Int64((deadline - now) / 1_000_000) + 1, Int64(Int32.max)))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { return false }
        }
    }

    /// Closes the socket (an idle helper then exits at end of input) and reaps the process: its
    /// wait status.
    @discardableResult
    func stop() -> Int32 {
        close(socket)
        var status: Int32 = 0
        // An idle helper exits within milliseconds of its input closing; one that does not is killed.
        for _ in 0..<200 {
            if waitpid(pid, &status, WNOHANG) == pid { return status }
            usleep(5_000)
        }
        Glibc.kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
        return status
    }

    /// Kills and reaps; the signal that ended the process (SIGKILL if this call did), nil when it
    /// exited on its own.
    func kill() -> Int32? {
        close(socket)
        var status: Int32 = 0
        // It may be dying already (its socket closed because it died): reap it with its own signal.
        var reaped = false
        for _ in 0..<50 where !reaped {
            reaped = waitpid(pid, &status, WNOHANG) == pid
            if !reaped { usleep(2_000) }
        }
        if !reaped {
            Glibc.kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
        }
        let signaled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
        return signaled ? status & 0x7f : nil
    }

    /// Closes the socket and reaps a helper that ends on its own (killed if it does not within a
    /// second): how it ended, in words.
    func exitStatus() -> String {
        let status = stop()
        let signal = status & 0x7f
        return signal == 0 ? "exit status \((status >> 8) & 0xff)" : "killed by signal \(signal)"
    }

    /// Ends a helper that answered: killed at once and reaped (nothing of it is worth waiting for).
    func end() {
        close(socket)
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
}
