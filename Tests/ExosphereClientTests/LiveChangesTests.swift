import ExosphereClient
import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

/// `Exosphere.liveChanges()` against a real server: changes from another device arrive, a server
/// restart is bridged with `Last-Event-ID` (nothing missed, nothing repeated), and the end of the
/// session ends the sequence and signs the client out.
@Suite(.testThreads, .liveServer("live", { $0.liveEvents.heartbeat = .seconds(1) }))
struct LiveChangesTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// What a sequence delivered, collected by a task of its own. A wait is resumed by the
    /// collecting task the moment what it waits for has come (or by its deadline, which fails it:
    /// 30 s by default). The collecting task runs on the cooperative pool, which no test blocks
    /// (`.testThreads`): before the tests ran on threads of their own, a sequence that ends without
    /// touching the network had not ended after 180 s while the blocking tests held the pool.
    final class Collector: Sendable {
        private typealias Condition = @Sendable ([LiveChange], Result<Void, any Error>?) -> Bool

        private struct Waiter: Sendable {
            let isMet: Condition
            let continuation: CheckedContinuation<Void, any Error>
        }

        private struct State: Sendable {
            var changes: [LiveChange] = []
            var outcome: Result<Void, any Error>?
            var waiters: [UUID: Waiter] = [:]

            /// Takes the waiters whose condition now holds.
            mutating func met() -> [Waiter] {
                let ready = waiters.filter { $0.value.isMet(changes, outcome) }
                for id in ready.keys { waiters[id] = nil }
                return Array(ready.values)
            }
        }

        private final class Shared: Sendable {
            let state = Mutex(State())
            let task = Mutex<Task<Void, Never>?>(nil)

            func update(_ change: @Sendable (inout State) -> Void) {
                let ready = state.withLock { state -> [Waiter] in
                    change(&state)
                    return state.met()
                }
                for waiter in ready { waiter.continuation.resume() }
            }
        }

        private let shared = Shared()

        init(_ sequence: AsyncThrowingStream<LiveChange, any Error>) {
            let shared = shared
            let started = Task {
                do {
                    for try await change in sequence { shared.update { $0.changes.append(change) } }
                    shared.update { $0.outcome = .success(()) }
                } catch {
                    shared.update { $0.outcome = .failure(error) }
                }
            }
            shared.task.withLock { $0 = started }
        }

        func cancel() { shared.task.withLock { $0?.cancel() } }

        /// Waits until `count` changes came (failing after `timeout`); returns them all.
        func waitFor(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [LiveChange] {
            try await wait(for: "\(count) changes", timeout: timeout) { changes, _ in changes.count >= count }
            return shared.state.withLock { $0.changes }
        }

        /// Waits until the sequence ended (failing after `timeout`); how it ended.
        func ended(timeout: Duration = .seconds(30)) async throws -> Result<Void, any Error> {
            try await wait(for: "the end of the sequence", timeout: timeout) { _, outcome in outcome != nil }
            return shared.state.withLock { $0.outcome! }
        }

        private func wait(for what: String, timeout: Duration, _ isMet: @escaping Condition) async throws {
            let id = UUID()
            let shared = shared
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let metAlready = shared.state.withLock { state -> Bool in
                    if isMet(state.changes, state.outcome) { return true }
                    state.waiters[id] = Waiter(isMet: isMet, continuation: continuation)
                    return false
                }
                if metAlready { return continuation.resume() }
                let (seconds, attoseconds) = timeout.components
                DispatchQueue.global().asyncAfter(deadline: .now() + Double(seconds) + Double(attoseconds) / 1e18) {
                    let expired = shared.state.withLock { state -> (Waiter, String)? in
                        state.waiters.removeValue(forKey: id).map { ($0, "\(state.changes), outcome \(String(describing: state.outcome))") }
                    }
                    if let (waiter, seen) = expired { waiter.continuation.resume(throwing: TimedOut(what: "\(what); got \(seen)")) }
                }
            }
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    @Test func changesFromAnotherDeviceArriveAcrossARestartAndTheSessionsEndStopsThem() async throws {
        let (phone, email, password) = try await server.signedInClient(firstname: "Ayu")
        let tablet = try server.client()
        _ = try await tablet.signIn(email: email, password: password)
        let collector = Collector(phone.liveChanges())
        defer { collector.cancel() }
        // The stream is open once a heartbeat has been answered; a change made now is live.
        try await waitUntilStreaming()

        var user = try await tablet.fetchUser()
        user.firstname = "Ayu Lestari"
        user = try await tablet.save(user)
        let image = try await tablet.uploadImage(ImagesTests.photo(3), contentType: .png)
        var changes = try await collector.waitFor(2)
        guard changes.count == 2, case .profile(let seen) = changes[0], case .imageAdded(let added) = changes[1] else {
            Issue.record("expected a profile and an image: \(changes)")
            return
        }
        #expect(seen.firstname == "Ayu Lestari" && seen.id == user.id)
        #expect(added.id == image.id && added.sha256 == image.sha256)
        // The phone's own copy of the user follows (with its ETag, for the next save).
        try await waitUntil { phone.currentUser?.firstname == "Ayu Lestari" }

        // The server goes away, and while it is down the profile changes (an operator's SQL: the
        // database's triggers record it as any change). The stream reconnects once the server is
        // back, with the last id it had, so it gets that change, and nothing before it twice.
        server.stop()
        let connection = try PostgresConnection(connectionString: server.databaseURL)
        _ = try connection.execute("UPDATE users SET lastname = 'Offline', version = version + 1 WHERE id = \(UUID(uuidString: user.id)!)")
        connection.close()
        try server.start()
        // The client has waited longer after each failed try while the server was down.
        changes = try await collector.waitFor(3)
        guard changes.count == 3, case .profile(let changed) = changes[2] else {
            Issue.record("expected the change made while the server was down: \(changes)")
            return
        }
        #expect(changed.lastname == "Offline")
        try await tablet.deleteImage(image)
        changes = try await collector.waitFor(4)
        #expect(changes.count == 4 && changes[3] == .imageDeleted(id: image.id), "\(changes)")

        // The tablet changes the password: every other session ends, the phone's stream with it.
        _ = try await tablet.changePassword(old: password, new: password + "-new")
        changes = try await collector.waitFor(5)
        #expect(changes.last == .sessionEnded, "\(changes)")
        #expect(try await collector.ended().get() == ())
        #expect(!phone.isSignedIn)
    }

    @Test func withoutASessionTheSequenceSaysSo() async throws {
        let client = try server.client()
        let collector = Collector(client.liveChanges())
        let outcome = try await collector.ended()
        guard case .failure(let error) = outcome else {
            Issue.record("expected not_signed_in, got \(outcome)")
            return
        }
        #expect((error as? ExosphereError)?.code == .notSignedIn)
    }

    /// Until the server has an open event stream (its metrics say so).
    private func waitUntilStreaming() async throws {
        try await waitUntil { try await server.metric("exosphere_event_streams_open") >= 1 }
    }
}
