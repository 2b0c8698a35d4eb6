import CLinux
import CVips
import Glibc
import Thumbnails

/// `exosphere thumbnailer`: the helper process the server starts to decode images. It reads
/// request frames on stdin and writes answers on stdout, one image at a time, until stdin ends.
///
/// Before the first image it closes every other descriptor it inherited, loads libvips (with every
/// loader blocked but the five accepted formats), then confines itself: no core dumps, no file
/// written, an address-space limit, and a seccomp filter that leaves it the system calls of
/// decoding (no open, socket, exec or fork). Each image gets a CPU-time allowance, set with
/// `RLIMIT_CPU` before it starts: a file that makes a decoder spin gets the process killed by the
/// kernel, and the server replaces it.
public enum ThumbnailerProcess {
    public struct Options: Sendable {
        /// The address-space limit, in bytes.
        public var memoryLimitBytes: Int = 1 << 30
        /// Whether to install the seccomp filter.
        public var seccomp = true

        public init() {}
    }

    /// Runs until stdin is closed; the process's exit status.
    public static func run(_ options: Options, argv0: String) -> Int32 {
        _ = clinux_close_from(3)
        signal(SIGPIPE, SIG_IGN)
        // libvips' ORC JIT first tries to write its code to a temporary file it maps twice
        // (writable, executable). The filter refuses the open and ORC falls back to an anonymous
        // writable and executable mapping (1.8× faster than without ORC, measured); without the
        // filter (--no-seccomp) the write meets RLIMIT_FSIZE, which must fail, not kill.
        signal(SIGXFSZ, SIG_IGN)
        guard exo_vips_start(argv0) == 0 else {
            report("libvips failed to start")
            return 70
        }
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        _ = setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        limit = rlimit(rlim_cur: rlim_t(options.memoryLimitBytes), rlim_max: rlim_t(options.memoryLimitBytes))
        _ = setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        if options.seccomp, clinux_confine_to_decoding() != 0 {
            report("the seccomp filter could not be installed")
            return 71
        }
        var input = FrameReader(fd: 0)
        while let frame = input.next() {
            guard let (job, range) = try? ThumbnailWire.decodeRequest(frame) else {
                report("a malformed request")
                return 65
            }
            allowCPU(seconds: job.cpuSeconds)
            let outcome = frame.withUnsafeBytes { Renderer.run(job, original: UnsafeRawBufferPointer(rebasing: $0[range])) }
            guard writeAll(1, ThumbnailWire.encode(outcome)) else { return 0 }
        }
        return 0
    }

    /// The process's CPU time (all threads) may grow by `seconds` for this image: a profiling
    /// timer, whose `SIGPROF` ends the process, counts it to the millisecond. `RLIMIT_CPU` (whole
    /// seconds, counted over the process's life) stands behind it a second later: `SIGXCPU`.
    static func allowCPU(seconds: Int) {
        let allowance = max(1, seconds)
        var timer = itimerval(it_interval: timeval(tv_sec: 0, tv_usec: 0), it_value: timeval(tv_sec: allowance, tv_usec: 0))
        _ = setitimer(Int32(ITIMER_PROF.rawValue), &timer, nil)
        var usage = rusage()
        _ = getrusage(RUSAGE_SELF.rawValue, &usage)
        let used = Int(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1
        var limit = rlimit(rlim_cur: rlim_t(used + allowance + 1), rlim_max: rlim_t(used + allowance + 2))
        _ = setrlimit(Int32(RLIMIT_CPU.rawValue), &limit)
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
        _ = writeAll(2, Array(("exosphere thumbnailer: " + message + "\n").utf8))
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
