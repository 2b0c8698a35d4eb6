import Glibc
import ThumbnailWorker

// `exosphere-thumbnailer`: the helper process the server starts to decode images with libvips,
// confined (its own empty root, seccomp, resource limits) and fed one image at a time over a socket pair. An
// executable of its own, so that libvips and its decoders never load into the serving process.

var options = ThumbnailerProcess.Options()
var rest = Array(CommandLine.arguments.dropFirst())
while let flag = rest.first {
    rest.removeFirst()
    if flag == "--no-seccomp" {
        options.seccomp = false
    } else if flag == "--thumbnail-memory-mb", let value = rest.first.flatMap({ Int($0) }), (128...65_536).contains(value) {
        rest.removeFirst()
        options.memoryLimitBytes = value << 20
    } else if flag == "--isolation", let mode = rest.first.flatMap(Sandbox.Mode.init) {
        rest.removeFirst()
        options.isolation = mode
    } else if flag == "--check-isolation" {
        options.checkIsolation = true
    } else if flag == "--simulate-compromise", let kind = rest.first.flatMap(ThumbnailerProcess.Compromise.init) {
        // Tests only: a helper that behaves as a decoder taken over by a crafted file.
        rest.removeFirst()
        options.compromise = kind
    } else {
        let usage = Array(
            "usage: exosphere-thumbnailer [--thumbnail-memory-mb N] [--no-seccomp] [--isolation required|best-effort|off] [--check-isolation] (started by exosphere serve)\n"
                .utf8)
        _ = usage.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}
exit(ThumbnailerProcess.run(options, argv0: "exosphere-thumbnailer"))
