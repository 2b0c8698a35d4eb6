import ExosphereClient
import Foundation
import Postgres
import Synchronization
import Testing

/// `Exosphere.liveChanges()` against a real server: changes from another device arrive, a server
/// restart is bridged with `Last-Event-ID` (nothing missed, nothing repeated), and the end of the
/// session ends the sequence and signs the client out.
@Suite(.liveServer("live", { $0.liveEvents.heartbeat = .seconds(1) }))
struct LiveChangesTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// What a sequence delivered, collected by a task of its own.
    final class Collector: Sendable {
        private final class State: Sendable {
            let changes = Mutex<[LiveChange]>([])
            let outcome = Mutex<Result<Void, any Error>?>(nil)
        }

        private let state: State
        let task: Task<Void, Never>

        init(_ sequence: AsyncThrowingStream<LiveChange, any Error>) {
            let state = State()
            self.state = state
            task = Task {
                do {
                    for try await change in sequence { state.changes.withLock { $0.append(change) } }
                    state.outcome.withLock { $0 = .success(()) }
                } catch {
                    state.outcome.withLock { $0 = .failure(error) }
                }
            }
        }

        /// Waits (at most `timeout`) until `count` changes came; returns them all.
        func waitFor(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [LiveChange] {
            let deadline = ContinuousClock.now + timeout
            while state.changes.withLock({ $0.count }) < count {
                guard ContinuousClock.now < deadline else {
                    throw TimedOut(
                        what: "\(count) changes; got \(state.changes.withLock { $0 }), outcome \(String(describing: state.outcome.withLock { $0 }))")
                }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            return state.changes.withLock { $0 }
        }

        /// Waits (at most `timeout`) until the sequence ended.
        func ended(timeout: Duration = .seconds(10)) async throws -> Result<Void, any Error> {
            let deadline = ContinuousClock.now + timeout
            while true {
                if let outcome = state.outcome.withLock({ $0 }) { return outcome }
                guard ContinuousClock.now < deadline else { throw TimedOut(what: "the end of the sequence") }
                try await Task.sleep(nanoseconds: 20_000_000)
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
        defer { collector.task.cancel() }
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
        try await eventually { phone.currentUser?.firstname == "Ayu Lestari" }

        // The server goes away, and while it is down the profile changes (an operator's SQL: the
        // database's triggers record it as any change). The stream reconnects once the server is
        // back, with the last id it had, so it gets that change, and nothing before it twice.
        server.stop()
        let connection = try PostgresConnection(connectionString: server.databaseURL)
        _ = try connection.execute("UPDATE users SET lastname = 'Offline', version = version + 1 WHERE id = \(UUID(uuidString: user.id)!)")
        connection.close()
        try server.start()
        // The client has waited longer after each failed try while the server was down.
        changes = try await collector.waitFor(3, timeout: .seconds(60))
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
        try await eventually { try await server.metric("exosphere_event_streams_open") >= 1 }
    }
}

/// Polls `condition` until it holds; throws when `timeout` passes first, and what it throws.
func eventually(timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw LiveChangesTests.TimedOut(what: "the condition") }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
}
