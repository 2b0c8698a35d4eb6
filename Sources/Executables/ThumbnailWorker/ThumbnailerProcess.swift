import CLinux
import CVips
import Glibc
import Thumbnails

/// `exosphere-thumbnailer`: the helper process the server starts to decode images. It reads
/// request frames on stdin and writes answers on stdout, one image at a time, until stdin ends.
///
/// Before the first image it closes every other descriptor it inherited, loads libvips (with every
/// loader blocked but the five accepted formats), then confines itself: the server's files hidden
/// (`Sandbox`: an empty root of its own, and nobody's uid when started by root), no core dumps, no
/// file written, an address-space limit, and a seccomp filter that leaves it the system calls of
/// decoding (no open, socket, exec or fork, no signal or limit for another process, no executable
/// memory). Each image gets a CPU-time allowance before it starts: a file that makes a decoder spin
/// gets the process killed by the kernel. The server gives each helper one image and then ends it,
/// so no helper ever holds two images (or two users' images).
public enum ThumbnailerProcess {
    public struct Options: Sendable {
        /// The address-space limit, in bytes.
        public var memoryLimitBytes: Int = 1 << 30
        /// Whether to install the seccomp filter.
        public var seccomp = true
        /// Whether the server's files must be hidden (`Sandbox`).
        public var isolation = Sandbox.Mode.required
        /// `--check-isolation`: confine itself as for an image, write one line on stdout (`hidden
        /// HOW`, `visible WHY` or `off`) and exit; the server runs this once as it starts.
        public var checkIsolation = false
        /// For tests only (`--simulate-compromise`): behave as a decoder taken over by a crafted
        /// file would, once confined, so that the tests can show what it can and cannot do.
        public var compromise: Compromise?

        public init() {}
    }

    /// What a taken-over helper tries.
    public enum Compromise: String, Sendable {
        /// Signal and limit the server, map executable memory; answers what each call returned.
        case escape
        /// Answers a rendition of another size than the one asked for.
        case wrongSize = "wrong-size"
        /// Answers a rendition in another format than the one asked for.
        case wrongFormat = "wrong-format"
        /// Tries to stat and open each path of the "image" (one a line): answers what each call
        /// returned.
        case probe
    }

    /// Runs until stdin is closed; the process's exit status.
    public static func run(_ options: Options, argv0: String) -> Int32 {
        _ = clinux_close_from(3)
        signal(SIGPIPE, SIG_IGN)
        // A write that meets RLIMIT_FSIZE (without the filter, --no-seccomp) must fail, not kill.
        signal(SIGXFSZ, SIG_IGN)
        guard exo_vips_start(argv0) == 0 else {
            report("libvips failed to start")
            return 70
        }
        // Once libvips has loaded every library and module it will use (it opens no file after
        // start-up: the seccomp filter below would refuse it), and while the process has one thread.
        var isolation = "off"
        if options.isolation != .off {
            let outcome = Sandbox.enter()
            isolation = (outcome.hidden ? "hidden " : "visible ") + outcome.description
            if !outcome.hidden, options.isolation == .required {
                report("the server's files could not be hidden (\(outcome)); see --thumbnail-isolation")
                if options.checkIsolation { _ = writeAll(1, Array((isolation + "\n").utf8)) }
                return 73
            }
        }
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        _ = setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        limit = rlimit(rlim_cur: rlim_t(options.memoryLimitBytes), rlim_max: rlim_t(options.memoryLimitBytes))
        _ = setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        if options.seccomp, clinux_confine_to_decoding(getpid()) != 0 {
            report("the seccomp filter could not be installed")
            return 71
        }
        if options.checkIsolation { return writeAll(1, Array((isolation + "\n").utf8)) ? 0 : 74 }
        var input = FrameReader(fd: 0)
        while let frame = input.next() {
            guard let (job, range) = try? ThumbnailWire.decodeRequest(frame) else {
                report("a malformed request")
                return 65
            }
            guard allowCPU(seconds: job.cpuSeconds) else {
                // Without its allowance an image could be blamed for time it did not use: end
                // here, and the server tries again on a fresh helper.
                report("the CPU allowance could not be set")
                return 72
            }
            var outcome: ThumbnailOutcome
            if let compromise = options.compromise {
                outcome = frame.withUnsafeBytes { simulate(compromise, job, original: UnsafeRawBufferPointer(rebasing: $0[range])) }
            } else {
                outcome = frame.withUnsafeBytes { Renderer.run(job, original: UnsafeRawBufferPointer(rebasing: $0[range])) }
            }
            guard writeAll(1, ThumbnailWire.encode(outcome)) else { return 0 }
        }
        return 0
    }

    /// The process's CPU time (all threads) may grow by `seconds` for this image, counted from
    /// now: a profiling timer, whose `SIGPROF` ends the process, counts it to the millisecond, and
    /// the soft `RLIMIT_CPU` (whole seconds, counted over the process's life, so set from what it
    /// used so far) stands behind it a second later: `SIGXCPU`. Only the soft limit moves: raising
    /// the hard one needs a privilege (an earlier version set both, so its second image's limit
    /// silently stayed the first one's). False when either could not be set.
    static func allowCPU(seconds: Int) -> Bool {
        let allowance = max(1, seconds)
        var timer = itimerval(it_interval: timeval(tv_sec: 0, tv_usec: 0), it_value: timeval(tv_sec: allowance, tv_usec: 0))
        guard setitimer(Int32(ITIMER_PROF.rawValue), &timer, nil) == 0 else { return false }
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return false }
        let used = Int(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_CPU.rawValue), &limit) == 0 else { return false }
        let wanted = rlim_t(used + allowance + 1)
        guard limit.rlim_max == rlim_t.max || limit.rlim_max >= wanted else { return false }  // rlim_t.max: RLIM_INFINITY
        limit.rlim_cur = wanted
        return setrlimit(Int32(RLIMIT_CPU.rawValue), &limit) == 0
    }

    /// A decoder taken over by a crafted file, for tests: tries what such code would.
    static func simulate(_ compromise: Compromise, _ job: ThumbnailJob, original: UnsafeRawBufferPointer) -> ThumbnailOutcome {
        func outcome(_ result: Int) -> String { result == 0 ? "allowed" : (errno == EPERM ? "EPERM" : "errno \(errno)") }
        switch compromise {
        case .escape:
            let server = getppid()
            // Signal 0 checks without harming: only the filter's answer is of interest.
            let signalServer = outcome(Int(clinux_tgkill(server, server, 0)))
            let limitServer = outcome(Int(clinux_read_prlimit(server)))
            let signalSelf = outcome(Int(clinux_tgkill(getpid(), gettid(), 0)))
            let limitSelf = outcome(Int(clinux_read_prlimit(0)))
            let executable = mmap(nil, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            let mapWX = outcome(executable == MAP_FAILED ? -1 : 0)
            let writable = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            let protectX = writable == MAP_FAILED ? "no mapping" : outcome(Int(mprotect(writable, 4096, PROT_READ | PROT_EXEC)))
            return .undecodable(
                "pid=\(getpid()) tgkill(server)=\(signalServer) prlimit(server)=\(limitServer) tgkill(self)=\(signalSelf) "
                    + "prlimit(self)=\(limitSelf) mmap(wx)=\(mapWX) mprotect(x)=\(protectX)")
        case .probe:
            func answer(_ result: Int32) -> String {
                switch result >= 0 ? 0 : errno {
                case 0: "allowed"
                case ENOENT: "ENOENT"
                case EACCES: "EACCES"
                case EPERM: "EPERM"
                case let other: "errno-\(other)"
                }
            }
            let paths = String(decoding: original, as: UTF8.self).split(separator: "\n").map(String.init)
            var fields = ["uid=\(getuid())"]
            for path in paths {
                var status = stat()
                fields.append("stat(\(path))=\(answer(stat(path, &status)))")
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                fields.append("open(\(path))=\(answer(fd))")
                if fd >= 0 { close(fd) }
            }
            return .undecodable(fields.joined(separator: " "))
        case .wrongSize, .wrongFormat:
            var asked = job
            asked.renditions = job.renditions.map { spec in
                compromise == .wrongSize
                    ? ThumbnailSpec(size: spec.size * 2, format: spec.format)
                    : ThumbnailSpec(size: spec.size, format: spec.format == .webp ? .jpeg : .webp)
            }
            guard case .made(let renditions, let placeholders) = Renderer.run(asked, original: original) else {
                return .undecodable("the simulation could not render")
            }
            // Labelled as what was asked for.
            return .made(
                zip(job.renditions, renditions).map { Rendition(spec: $0, width: $1.width, height: $1.height, bytes: $1.bytes) }, placeholders)
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// One line on stderr (the server sends it to /dev/null unless asked to keep it).
    static func report(_ message: String) {
        _ = writeAll(2, Array(("exosphere-thumbnailer: " + message + "\n").utf8))
    }

    /// Reads whole request frames from a blocking descriptor: the head a few bytes at a time,
    /// then the rest straight into one buffer of the frame's size.
    struct FrameReader {
        let fd: Int32

        mutating func next() -> [UInt8]? {
            var frame: [UInt8] = []
            var length: Int?
            while length == nil {
                // The head is at most 5 + 255 × 3 + 17 bytes; read it in small steps so that no byte
                // of the original is read here.
                let wanted = frame.count < 5 ? 5 - frame.count : 5 + Int(frame[4]) * 3 + 17 - frame.count
                guard wanted > 0, let bytes = read(wanted) else { return nil }
                frame += bytes
                do {
                    length = try ThumbnailWire.requestLength(header: frame)
                } catch {
                    return nil
                }
            }
            guard let length, length >= frame.count else { return nil }
            let head = frame.count
            frame += [UInt8](repeating: 0, count: length - head)
            var filled = head
            while filled < length {
                let count = frame.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, length - filled) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return nil }
                filled += count
            }
            return frame
        }

        private func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, count - filled) }
                if got < 0, errno == EINTR { continue }
                guard got > 0 else { return nil }
                filled += got
            }
            return bytes
        }
    }
}
