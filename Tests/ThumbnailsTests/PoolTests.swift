import Files
import Synchronization
import Foundation
import StructuredLogging
import TestSupport
import Testing
import Thumbnails

/// The helper pool against real `exosphere-thumbnailer` processes and real files: thumbnails,
/// placeholders, hostile files, helpers that die, and the confinement.
@Suite(.testThreads, .serialized)
struct PoolTests {
    static func pool(_ change: (inout ThumbnailerPool.Configuration) -> Void = { _ in }) throws -> ThumbnailerPool {
        var configuration = ThumbnailerPool.Configuration()
        configuration.executable = try #require(TestImages.thumbnailerExecutable(), "build the exosphere-thumbnailer executable first")
        change(&configuration)
        let pool = ThumbnailerPool(configuration: configuration, logger: Logger(label: "test", level: .critical))
        try pool.start()
        return pool
    }

    static func job(_ specs: [ThumbnailSpec], placeholders: Bool = false) -> ThumbnailJob {
        ThumbnailJob(renditions: specs, placeholders: placeholders, maxPixels: 100_000_000, cpuSeconds: 5)
    }

    static func render(_ pool: ThumbnailerPool, _ bytes: [UInt8], _ job: ThumbnailJob) throws -> ThumbnailOutcome {
        try bytes.withUnsafeBytes { try pool.render(job, original: $0) }
    }

    /// A 12-megapixel-like JPEG, smaller for speed: 1600 × 1200 with a gradient.
    static let photo: [UInt8] = try! TestImages.encode(
        TestImages.Pixels(width: 1600, height: 1200) { x, y in (UInt8(x % 256), UInt8(y % 256), UInt8((x + y) % 256)) }, as: ".jpg[Q=90]")

    @Test func everyFormatMakesBothEncodingsWithPlaceholders() throws {
        let pool = try Self.pool()
        defer { pool.shutdown() }
        let upright = TestImages.marked(width: 300, height: 200)
        for suffix in [".jpg[Q=90]", ".png", ".webp[Q=90]", ".gif", ".heic"] {
            let bytes = try TestImages.encode(upright, as: suffix)
            let specs = [ThumbnailSpec(size: 128, format: .webp), ThumbnailSpec(size: 256, format: .jpeg)]
            guard case .made(let renditions, let placeholders) = try Self.render(pool, bytes, Self.job(specs, placeholders: true)) else {
                Issue.record("\(suffix) was not decoded")
                continue
            }
            #expect(renditions.map(\.spec) == specs, "\(suffix)")
            #expect(renditions.map { $0.width * 10_000 + $0.height } == [1_280_085, 2_560_171], "\(suffix)")
            #expect(renditions[0].bytes.starts(with: Array("RIFF".utf8)), "\(suffix)")
            #expect(renditions[1].bytes.starts(with: [0xFF, 0xD8, 0xFF]), "\(suffix)")
            let decoded = try TestImages.decode(renditions[1].bytes)
            #expect(decoded.at(20, 20).r > 180 && decoded.at(20, 20).b < 90, "\(suffix): top-left is red")
            #expect(decoded.at(230, 150).b > 180 && decoded.at(230, 150).r < 90, "\(suffix): bottom-right is blue")
            let color = try #require(placeholders?.dominantColor, "\(suffix)")
            #expect(color.hasPrefix("#f"), "\(suffix): white dominates, got \(color)")
            #expect(placeholders.map { Blurhash.isWellFormed(Array($0.blurhash.utf8)) } == true)
        }
    }

    @Test func everyOrientationIsApplied() throws {
        let pool = try Self.pool()
        defer { pool.shutdown() }
        let upright = TestImages.marked(width: 120, height: 60)
        for orientation in 1...8 {
            let stored = TestImages.stored(upright, orientation: orientation)
            let jpeg = TestImages.withOrientation(try TestImages.encode(stored, as: ".jpg[Q=95]"), UInt16(orientation))
            guard case .made(let renditions, _) = try Self.render(pool, jpeg, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) else {
                Issue.record("orientation \(orientation) was not decoded")
                continue
            }
            let decoded = try TestImages.decode(renditions[0].bytes)
            #expect(decoded.width == 120 && decoded.height == 60, "orientation \(orientation)")
            #expect(decoded.at(10, 10).r > 180 && decoded.at(10, 10).b < 90, "orientation \(orientation): top-left red")
            #expect(decoded.at(110, 50).b > 180 && decoded.at(110, 50).r < 90, "orientation \(orientation): bottom-right blue")
        }
    }

    @Test func metadataIsStripped() throws {
        let pool = try Self.pool()
        defer { pool.shutdown() }
        let jpeg = TestImages.withOrientation(try TestImages.encode(TestImages.marked(width: 64, height: 64), as: ".jpg"), 6)
        for format in ThumbnailFormat.allCases {
            guard case .made(let renditions, _) = try Self.render(pool, jpeg, Self.job([ThumbnailSpec(size: 128, format: format)])) else {
                Issue.record("not decoded")
                return
            }
            let bytes = renditions[0].bytes
            #expect(!bytes.contains(subsequence: Array("Exif".utf8)), "\(format)")
            #expect(!bytes.contains(subsequence: Array("EXIF".utf8)), "\(format)")
            #expect(!bytes.contains(subsequence: Array("ICC_PROFILE".utf8)), "\(format)")
            #expect(!bytes.contains(subsequence: Array("XMP".utf8)), "\(format)")
        }
    }

    @Test func hostileFilesGetTheirErrorAndThePoolCarriesOn() throws {
        let pool = try Self.pool { $0.cpuSeconds = 1 }
        defer { pool.shutdown() }
        let jpeg = Self.photo
        let bomb = Build.png(width: 60_000, height: 60_000, colorType: 2)
        let zeroWidth = Build.png(width: 0, height: 10, colorType: 2)
        let svg = Array("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>".utf8)
        let cases: [(String, [UInt8])] = [
            ("truncated", Array(jpeg.prefix(jpeg.count / 2))), ("zero width", zeroWidth), ("bomb", bomb), ("svg", svg),
            ("garbage", Array(repeating: 0x41, count: 5000)),
        ]
        for (name, bytes) in cases {
            let started = Date()
            let outcome = try Self.render(pool, bytes, Self.job([ThumbnailSpec(size: 256, format: .webp)], placeholders: true))
            guard case .undecodable(let reason) = outcome else {
                Issue.record("\(name) was decoded: \(outcome)")
                continue
            }
            #expect(Date().timeIntervalSince(started) < 2, "\(name): \(reason)")
        }
        // The same helpers still make thumbnails.
        guard case .made = try Self.render(pool, jpeg, Self.job([ThumbnailSpec(size: 256, format: .webp)])) else {
            Issue.record("the pool no longer decodes")
            return
        }
        #expect(pool.statistics.helperDeaths == 0)
    }

    /// 10 000 × 10 000 16-bit RGBA, 0.4 MB of PNG: over two seconds of decoding.
    static func slowPNG() throws -> [UInt8] { try TestImages.slowPNG() }

    @Test func aFileThatMakesTheDecoderSpinUsesUpItsCPUAllowance() throws {
        let pool = try Self.pool {
            $0.cpuSeconds = 1
            $0.helpers = 1
        }
        defer { pool.shutdown() }
        let slow = try Self.slowPNG()
        let started = Date()
        guard case .undecodable(let reason) = try Self.render(pool, slow, Self.job([ThumbnailSpec(size: 256, format: .webp)])) else {
            Issue.record("the slow file was decoded within one CPU second")
            return
        }
        #expect(reason.contains("CPU"), "\(reason)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(pool.statistics.helperDeaths == 1)
        // A fresh helper takes its place.
        guard case .made = try Self.render(pool, Self.photo, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) else {
            Issue.record("no fresh helper")
            return
        }
    }

    /// A deadline passed while the CPU allowance was not spent says the machine was busy, not that
    /// the file is bad: `503`, never `undecodable` (which the server would remember).
    @Test func aHelperPastItsDeadlineIsKilledAndTheImageIsNotBlamed() throws {
        let pool = try Self.pool {
            $0.deadlineSeconds = 0.3
            $0.helpers = 1
        }
        defer { pool.shutdown() }
        let started = Date()
        #expect(throws: ThumbnailsUnavailable.self) {
            try Self.render(pool, try Self.slowPNG(), Self.job([ThumbnailSpec(size: 256, format: .webp)]))
        }
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(pool.statistics.timeouts == 1)
        #expect(pool.statistics.undecodable == 0)
        // A fresh helper makes the next image: a tiny one, tried up to three times, since the
        // 0.3 s deadline holds for it too and the whole suite runs beside this test.
        var outcome: ThumbnailOutcome?
        for _ in 0..<3 where outcome == nil {
            do {
                outcome = try Self.render(pool, RealFiles.jpeg5x3, Self.job([ThumbnailSpec(size: 128, format: .jpeg)]))
            } catch is ThumbnailsUnavailable {
                continue
            }
        }
        guard case .made = outcome else {
            Issue.record("no fresh helper: \(String(describing: outcome))")
            return
        }
    }

    /// The allowance is this image's alone: images that each use well under it, one after the
    /// other, more than it together, are all made. (A helper used to decode image after image, and
    /// its CPU limit could not be raised past the first image's: a later, innocent image was
    /// declared undecodable for what the ones before it used.)
    @Test func anImageIsNotBlamedForTheCPUOfTheImagesBeforeIt() throws {
        let pool = try Self.pool {
            $0.cpuSeconds = 1
            $0.helpers = 1
        }
        defer { pool.shutdown() }
        var used = 0.0
        var made = 0
        while used < 4 {
            let before = Self.childrenCPUSeconds()
            let outcome = try Self.render(pool, Self.photo, Self.job([ThumbnailSpec(size: 1024, format: .webp)]))
            guard case .made = outcome else {
                Issue.record("image \(made + 1), after \(used) CPU seconds of the ones before it: \(outcome)")
                return
            }
            made += 1
            used += Self.childrenCPUSeconds() - before
            try #require(made < 400, "the helpers use no CPU that this process can see")
        }
        #expect(pool.statistics.undecodable == 0)
    }

    /// The CPU time of this process's reaped children (the helpers), in seconds.
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        _ = getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// A helper that behaves as a decoder taken over by a crafted file: it may signal and limit
    /// itself, not the server; it can map no executable memory; and it is a new process for each
    /// image, so it never sees a second one.
    @Test func aTakenOverHelperStaysInItsBox() throws {
        let pool = try Self.pool {
            $0.helpers = 1
            $0.helperArguments = ["--simulate-compromise", "escape"]
        }
        defer { pool.shutdown() }
        var pids: [String] = []
        for _ in 0..<2 {
            guard case .undecodable(let report) = try Self.render(pool, Self.photo, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) else {
                Issue.record("the simulated compromise made a thumbnail")
                return
            }
            let fields = Dictionary(
                uniqueKeysWithValues: report.split(separator: " ").map { field in
                    let parts = field.split(separator: "=", maxSplits: 1)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                })
            #expect(fields["tgkill(server)"] == "EPERM", "\(report)")
            #expect(fields["prlimit(server)"] == "EPERM", "\(report)")
            #expect(fields["tgkill(self)"] == "allowed", "\(report)")
            #expect(fields["prlimit(self)"] == "allowed", "\(report)")
            #expect(fields["mmap(wx)"] == "EPERM", "\(report)")
            #expect(fields["mprotect(x)"] == "EPERM", "\(report)")
            pids.append(fields["pid"] ?? "")
        }
        #expect(pids.count == 2 && pids[0] != pids[1], "one helper decoded two images: \(pids)")
    }

    /// A helper taken over by a crafted file looks for the server's files (the "image" lists the
    /// paths): a file of the server's (mode 0600, in a directory of its own), that directory, the
    /// server's working directory, `/etc/passwd`, the server's environment in `/proc`. It can
    /// neither stat (`newfstatat`) nor open any of them: its root is an empty file system of its
    /// own. Without seccomp too, so that its `EPERM` on open hides nothing of the sandbox.
    @Test(arguments: [true, false])
    func aTakenOverHelperSeesNoneOfTheServersFiles(_ seccomp: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("exo-probe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret")
        try Data("the server's secret".utf8).write(to: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        let paths = [secret.path, directory.path, FileManager.default.currentDirectoryPath, "/etc/passwd", "/proc/\(getpid())/environ"]
        #expect(paths.allSatisfy { access($0, F_OK) == 0 }, "the server sees every path")
        let pool = try Self.pool {
            $0.helpers = 1
            $0.seccomp = seccomp
            $0.helperArguments = ["--simulate-compromise", "probe"]
        }
        defer { pool.shutdown() }
        let list = Array(paths.joined(separator: "\n").utf8)
        guard case .undecodable(let report) = try Self.render(pool, list, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) else {
            Issue.record("the simulated compromise made a thumbnail")
            return
        }
        let fields = Dictionary(
            uniqueKeysWithValues: report.split(separator: " ").map { field in
                let parts = field.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            })
        // The filter refuses every open (and getuid) with EPERM; it lets newfstatat through.
        let refusedOpen: Set<String> = seccomp ? ["EPERM"] : ["ENOENT", "EACCES"]
        for path in paths {
            #expect(["ENOENT", "EACCES"].contains(fields["stat(\(path))"]), "seccomp \(seccomp): \(report)")
            #expect(refusedOpen.contains(fields["open(\(path))"] ?? ""), "seccomp \(seccomp): \(report)")
        }
        if !seccomp, getuid() == 0 { #expect(fields["uid"] == "65534", "a helper started by root runs as nobody: \(report)") }
    }

    /// `start` checks, on a helper of its own, how helpers hide the server's files, and says so.
    @Test func startSaysHowHelpersAreIsolated() throws {
        let pool = try Self.pool { $0.helpers = 1 }
        defer { pool.shutdown() }
        let report = try pool.start()
        #expect(report.hasPrefix("hidden "), "\(report)")
        if getuid() == 0 {
            // A mount namespace here; a chroot where root lacks CAP_SYS_ADMIN (a container).
            #expect(report.hasSuffix(", uid 65534"), "\(report)")
        } else {
            #expect(report == "hidden user and mount namespaces with an empty root")
        }
        let open = try Self.pool {
            $0.helpers = 1
            $0.isolation = .off
        }
        defer { open.shutdown() }
        #expect(try open.start() == "off")
    }

    /// A helper that answers another size or another format than it was asked is not believed
    /// (a size over the one asked is refused as the answer is read, `ThumbnailWire`; the rest by
    /// the pool's check of the renditions).
    @Test(arguments: ["wrong-size", "wrong-format"])
    func aHelperThatAnswersAnotherRenditionIsNotBelieved(_ kind: String) throws {
        let pool = try Self.pool {
            $0.helpers = 1
            $0.helperArguments = ["--simulate-compromise", kind]
        }
        defer { pool.shutdown() }
        let outcome = try Self.render(pool, Self.photo, Self.job([ThumbnailSpec(size: 128, format: .webp)]))
        let refusals: Set<ThumbnailOutcome> = [
            .undecodable("the decoder's answer was not the rendition asked for"), .undecodable("the decoder failed on this file"),
        ]
        #expect(refusals.contains(outcome), "\(kind): \(outcome)")
        #expect(pool.statistics.made == 0)
    }

    @Test func aHelperKilledMidThumbnailIsReplacedAndTheRequestAnswered() throws {
        let pool = try Self.pool { $0.helpers = 1 }
        defer { pool.shutdown() }
        let slow = try Self.slowPNG()
        let killer = Thread {
            // Kill the helper at work on the slow file, once, as soon as it is at work: busy and
            // confined (a helper confines itself before it reads its image). If that never comes,
            // nothing is killed, and the checks below fail.
            _ = try? waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(5), "a confined helper at work") {
                guard let pid = pool.busyHelperPIDs.first,
                    let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8), status.contains("Seccomp:\t2")
                else { return false }
                kill(pid, SIGKILL)
                return true
            }
        }
        killer.start()
        let outcome = try Self.render(pool, slow, Self.job([ThumbnailSpec(size: 128, format: .jpeg)]))
        guard case .made(let renditions, _) = outcome else {
            Issue.record("the retry did not make the thumbnail: \(outcome)")
            return
        }
        #expect(renditions[0].width == 128)
        #expect(pool.statistics.helperDeaths == 1)
    }

    /// Background work (a thumbnail made ahead of a request) runs on a lowered helper; a request's
    /// on one at the server's own priority.
    @Test func backgroundWorkRunsLowered() throws {
        let pool = try Self.pool { $0.helpers = 1 }
        defer { pool.shutdown() }
        let slow = try Self.slowPNG()
        for background in [true, false] {
            let seen = Mutex<Int32?>(nil)
            let watcher = Thread {
                // The niceness (field 19 of /proc/PID/stat) of the helper at work on the slow file,
                // once it is confined: it was lowered before it was sent the image.
                _ = try? waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(2), "a confined helper at work") {
                    guard let pid = pool.busyHelperPIDs.first,
                        let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8), status.contains("Seccomp:\t2"),
                        let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                        let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 16, let nice = Int32(fields[16])
                    else { return false }
                    seen.withLock { $0 = nice }
                    return true
                }
            }
            watcher.start()
            let outcome = try slow.withUnsafeBytes {
                try pool.render(Self.job([ThumbnailSpec(size: 128, format: .jpeg)]), original: $0, background: background)
            }
            guard case .made = outcome else {
                Issue.record("no thumbnail: \(outcome)")
                return
            }
            try waitUntil(timeout: .seconds(30), "the watcher to have seen the helper") { seen.withLock { $0 } != nil }
            #expect(seen.withLock { $0 } == (background ? pool.configuration.backgroundNiceness : 0), "background: \(background)")
        }
    }

    @Test func manyAtOnceShareTheHelpers() async throws {
        let pool = try Self.pool { $0.helpers = 2 }
        defer { pool.shutdown() }
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<12 {
                group.addTask {
                    let spec = ThumbnailSpec(size: ThumbnailSpec.sizes[index % 4], format: index % 2 == 0 ? .webp : .jpeg)
                    if case .made(let renditions, _) = try Self.render(pool, Self.photo, Self.job([spec])) {
                        return renditions.first?.spec == spec
                    }
                    return false
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 12))
        #expect(pool.statistics.made == 12)
    }

    @Test func aFullQueueIsUnavailableNotAWait() throws {
        let pool = try Self.pool {
            $0.helpers = 1
            $0.queueLimit = 0
            $0.deadlineSeconds = 30
        }
        defer { pool.shutdown() }
        let slow = try Self.slowPNG()
        let busy = Thread { _ = try? Self.render(pool, slow, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) }
        busy.start()
        try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(5), "the slow render to take the only helper") {
            !pool.busyHelperPIDs.isEmpty
        }
        #expect(throws: ThumbnailsUnavailable.self) { try Self.render(pool, Self.photo, Self.job([ThumbnailSpec(size: 128, format: .jpeg)])) }
        #expect(pool.statistics.unavailable == 1)
    }

    @Test func helpersAreConfined() throws {
        let pool = try Self.pool { $0.helpers = 1 }
        defer { pool.shutdown() }
        let slow = try Self.slowPNG()
        nonisolated(unsafe) var status: String?
        nonisolated(unsafe) var limits: String?
        let watcher = Thread {
            // Once its helper confined itself (before it reads its first image), while it decodes.
            for _ in 0..<1000 {
                if let pid = pool.busyHelperPIDs.first,
                    let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8), text.contains("Seccomp:\t2"),
                    let limitText = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
                    limitText.split(separator: "\n").contains(where: Self.hasSoftCPULimit)
                {
                    status = text
                    limits = limitText
                    return
                }
                usleep(5_000)
            }
        }
        watcher.start()
        _ = try Self.render(pool, slow, Self.job([ThumbnailSpec(size: 128, format: .jpeg)]))
        let lines = try #require(status).split(separator: "\n")
        #expect(lines.contains("Seccomp:\t2"), "seccomp filter mode")
        if getuid() == 0 { #expect(lines.contains { $0.hasPrefix("Uid:\t65534\t65534\t65534") }, "runs as nobody") }
        #expect(lines.contains("NoNewPrivs:\t1"))
        let limitLines = try #require(limits).split(separator: "\n")
        #expect(limitLines.contains { $0.hasPrefix("Max address space") && $0.contains("1073741824") })
        #expect(limitLines.contains { $0.hasPrefix("Max core file size") && $0.contains(" 0 ") })
        #expect(limitLines.contains { $0.hasPrefix("Max file size") && $0.contains(" 0 ") })
        #expect(limitLines.contains(where: Self.hasSoftCPULimit))
    }

    /// `Max cpu time  7  unlimited  seconds`: a soft limit is set (the hard one stays unlimited).
    static func hasSoftCPULimit(_ line: Substring) -> Bool {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        return line.hasPrefix("Max cpu time") && fields.count >= 4 && Int(fields[3]) != nil
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        for start in 0...(count - subsequence.count) where self[start..<start + subsequence.count].elementsEqual(subsequence) { return true }
        return false
    }
}
