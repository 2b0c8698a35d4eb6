import HTTP
import HTTPServer
import Synchronization
import TestSupport
import Testing
import Threads

/// Each request on the worker pool has a deadline (`ServerConfiguration.requestDeadline`) from its
/// dispatch: its handler runs with it as its thread's `RequestDeadline`, and a request that waited
/// for a worker until past it is answered `503 overloaded` without running.
@Suite(.testThreads, .serialized) struct WorkerDeadlineTests {
    @Test func theHandlerRunsWithItsRequestsDeadline() throws {
        let router = testRouter { router in
            router.get("/deadline") { _, context in
                let current = RequestDeadline.current
                let body = current == context.deadline && current != nil ? "\(current!.remaining.components.seconds)" : "none"
                return Response(status: .ok, contentType: "text/plain", body: Array(body.utf8))
            }
        }
        let server = try startServer(router: router) { $0.requestDeadline = .seconds(30) }
        defer { server.shutdown() }
        let reply = try RawClient(port: server.port).request("GET", "/deadline")
        #expect(reply.status == 200)
        #expect(Int(reply.text).map { (1..<30).contains($0) } == true, "\(reply.text)")
    }

    @Test func aRequestThatWaitedForAWorkerPastItsDeadlineIsAnswered503WithoutRunning() throws {
        let release = Gate()
        let ran = Atomic<Int>(0)
        let router = testRouter { router in
            router.get("/hold") { _, _ in
                release.wait(timeout: 30)
                return Response(status: .ok)
            }
            router.get("/count") { _, _ in
                ran.add(1, ordering: .relaxed)
                return Response(status: .ok)
            }
        }
        let server = try startServer(router: router) {
            $0.workerThreads = 1
            $0.requestDeadline = .seconds(1)
        }
        defer {
            release.open()
            server.shutdown()
        }
        let holding = Background { (try? RawClient(port: server.port, timeout: 30).request("GET", "/hold"))?.status }
        try waitUntil("the one worker to be held") { server.workerStatistics.busy == 1 }
        let queued = Background { try? RawClient(port: server.port, timeout: 30).request("GET", "/count") }
        try waitUntil("the second request to be queued") { server.workerStatistics.queued == 1 }
        // Its deadline is at most 1 s after it was queued: the test waits for the clock, which is
        // what the deadline is about.
        let past = ContinuousClock.now + .seconds(1)
        try waitUntil("its deadline to pass") { ContinuousClock.now > past }
        release.open()
        let refused = try #require(queued.wait(timeout: 30) ?? nil)
        #expect(refused.status == 503, "\(refused.status) \(refused.text)")
        #expect(refused.text.contains("\"overloaded\""), "\(refused.text)")
        #expect(refused["Retry-After"] != nil)
        #expect(ran.load(ordering: .relaxed) == 0)
        #expect(holding.wait(timeout: 30) == 200)
    }
}
