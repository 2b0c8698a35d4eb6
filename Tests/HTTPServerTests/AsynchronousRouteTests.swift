import LoopInterface
import Foundation
import Glibc
import HTTP
import HTTPServer
import Synchronization
import TestSupport
import Testing

/// A loop-local source for the tests: a pipe whose every byte resumes the oldest waiting handler
/// with the id it was queued with, as a database result would.
final class PipeSource: LoopSource {
    static let ended = Atomic<Int>(0)
    /// Handlers resumed by any source so far.
    static let answered = Atomic<Int>(0)
    let readFD: Int32
    let writeFD: Int32
    private var waiting: [(handler: CheckedContinuation<Response, Never>, id: String)] = []
    private(set) var wakeUps = 0

    init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        readFD = fds[0]
        writeFD = fds[1]
    }

    /// Queues `handler`; a thread writes the byte that resumes it after `delay` seconds.
    func answerLater(_ handler: CheckedContinuation<Response, Never>, id: String, delay: Double) {
        waiting.append((handler, id))
        let fd = writeFD
        Thread.detachNewThread {
            usleep(useconds_t(delay * 1_000_000))
            var byte: UInt8 = 1
            _ = write(fd, &byte, 1)
        }
    }

    var fileDescriptor: Int32 { readFD }
    var wantsWrite: Bool { false }

    func readable() {
        var byte: UInt8 = 0
        while read(readFD, &byte, 1) == 1, !waiting.isEmpty {
            let (handler, id) = waiting.removeFirst()
            handler.resume(returning: Response(status: .ok, contentType: "text/plain", body: Array("later \(id)".utf8)))
            PipeSource.answered.add(1, ordering: .sequentiallyConsistent)
        }
    }

    func writable() {}
    func wakeUpEnded() { wakeUps += 1 }

    func loopEnded() {
        close(readFD)
        close(writeFD)
        PipeSource.ended.add(1, ordering: .relaxed)
    }
}

/// Routes whose handlers run on the event loop: answering at once, suspending until a watched
/// source resumes them, or hopping to the worker pool and back.
@Suite(.testThreads, .serialized) struct AsynchronousRouteTests {
    static func text(_ text: String) -> Response { Response(status: .ok, contentType: "text/plain", body: Array(text.utf8)) }

    static func router() -> Router {
        testRouter { router in
            router.add(.get, "/now", execution: .loop) { _, context in
                #expect(context.loop?.isCurrent == true)
                return text("now")
            }
            router.add(.get, "/later/{id}", execution: .loop) { _, context in
                let loop = context.loop!
                let source = loop.local { () -> PipeSource in
                    let source = PipeSource()
                    try! loop.watch(source)
                    return source
                }
                let response = await withCheckedContinuation { source.answerLater($0, id: context.parameters["id"] ?? "-", delay: 0.02) }
                // Resumed where the source answered: on its loop.
                return loop.isCurrent ? response : text("resumed off the loop")
            }
            router.add(.get, "/hop", execution: .loop) { _, context in
                let loop = context.loop!
                let onWorker = try await loop.blocking { !loop.isCurrent }
                return text(onWorker && loop.isCurrent ? "hopped" : "did not hop")
            }
            router.add(.get, "/worker") { _, context in
                text(context.loop?.isCurrent == false ? "worker" : "on the loop")
            }
            router.add(.get, "/conflict-later", execution: .loop) { _, _ in
                throw Problem(status: .conflict, domainCode: TestProblemCode.emailTaken, detail: "That email is taken.")
            }
        }
    }

    @Test func answersAtOnceLaterOrAfterAHopInOrder() throws {
        let server = try startServer(router: AsynchronousRouteTests.router())
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        #expect(try client.request("GET", "/now").text == "now")
        #expect(try client.request("GET", "/later/a").text == "later a")
        #expect(try client.request("GET", "/hop").text == "hopped")
        #expect(try client.request("GET", "/worker").text == "worker")
        let conflict = try client.request("GET", "/conflict-later")
        #expect(conflict.status == 409)
        #expect(conflict.text.contains("email_taken"))
        // Pipelined: each answer waits for the one before it, wherever its handler ran.
        try client.send(
            "GET /later/b HTTP/1.1\r\nHost: t\r\n\r\nGET /now HTTP/1.1\r\nHost: t\r\n\r\nGET /worker HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /later/c HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().text == "later b")
        #expect(try client.readResponse().text == "now")
        #expect(try client.readResponse().text == "worker")
        #expect(try client.readResponse().text == "later c")
        #expect(server.metrics.requestsInFlight == 0)
    }

    @Test func concurrentClientsEachGetTheirOwnAnswer() throws {
        let server = try startServer(router: AsynchronousRouteTests.router()) { $0.eventLoops = 2 }
        defer { server.shutdown() }
        let failures = Atomic<Int>(0)
        let threads = (0..<8).map { thread in
            Background<Void> {
                guard let client = try? RawClient(port: server.port) else {
                    failures.add(1, ordering: .relaxed)
                    return
                }
                for request in 0..<25 {
                    let id = "\(thread)-\(request)"
                    if (try? client.request("GET", "/later/\(id)").text) != "later \(id)" { failures.add(1, ordering: .relaxed) }
                }
            }
        }
        for thread in threads { _ = thread.wait(timeout: 30) }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(server.metrics.requestsInFlight == 0)
    }

    @Test func aClientThatLeavesBeforeItsAnswerHarmsNobody() throws {
        let endedBefore = PipeSource.ended.load(ordering: .relaxed)
        let answeredBefore = PipeSource.answered.load(ordering: .sequentiallyConsistent)
        let server = try startServer(router: AsynchronousRouteTests.router())
        do {
            let leaving = try RawClient(port: server.port)
            try leaving.send("GET /later/gone HTTP/1.1\r\nHost: t\r\n\r\n")
        }
        // The departed client's request was taken and answered (20 ms later, long after it left)
        // before the next client comes.
        try waitUntil(timeout: .seconds(10), "the departed client's request to be answered") {
            PipeSource.answered.load(ordering: .sequentiallyConsistent) != answeredBefore
        }
        #expect(PipeSource.answered.load(ordering: .sequentiallyConsistent) == answeredBefore + 1, "answered more than once")
        let client = try RawClient(port: server.port)
        #expect(try client.request("GET", "/later/here").text == "later here")
        server.shutdown()
        // The loop ended its source: the pipe is closed.
        #expect(PipeSource.ended.load(ordering: .relaxed) == endedBefore + 1)
    }
}
