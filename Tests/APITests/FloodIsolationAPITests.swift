import API
import Accounts
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

/// Routes that verify a password for a caller not yet signed in (`../shared/API.md`, "Sign-in
/// routes, signed URLs, uploads"): a flood from one address is refused first, and never starves
/// anyone else; reset confirmations are throttled per address as sign-ins are.
@Suite(.testThreads, .serialized)
struct FloodIsolationAPITests {
    static let adminPassword = "a long admin passphrase"

    /// One client posting admin sign-ins as fast as it can, from 6 connections: its hashes hold
    /// at most the pool's places but one (a worker's), so users signing in from elsewhere are
    /// all served, and the flood gets `503 overloaded`.
    @Test func aFloodFromOneAddressNeverStarvesSignInsFromAnother() throws {
        let server = try TestServer("flood_isolation") { configuration in
            configuration.passwordHashing = overlappingCost
            configuration.hashingThreads = 1
            configuration.hashingQueue = 2
            configuration.trustedProxies = ["127.0.0.1"]
            // Throttles out of the way: what is measured is the hashing pool.
            for rule in [\Configuration.accounts.signInPerEmailAndAddress, \.accounts.signInPerEmail, \.accounts.signInPerAddress] {
                configuration[keyPath: rule] = ThrottleRule(limit: 100_000, windowSeconds: 900)
            }
        }
        defer { server.shutdown() }
        _ = try server.app.accounts.administrators.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let user = try server.register()
        try server.waitForIdleHashing()
        let stop = Atomic<Bool>(false)
        let flood = Mutex<[Int]>([])
        let users = Mutex<[Int]>([])
        try onThreads(7) { index in
            if index == 6 {
                defer { stop.store(true, ordering: .relaxed) }
                try waitUntil(timeout: .seconds(30), "the flood to be refused with 503") { flood.withLock { $0.contains(503) } }
                for _ in 0..<4 {
                    let reply = try server.call(
                        "POST", "/users/signin", json: #"{"email": "\#(user.email)", "password": "\#(user.password)"}"#,
                        headers: [("X-Forwarded-For", "192.0.2.44")])
                    users.withLock { $0.append(reply.status) }
                    if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
                }
                return
            }
            while !stop.load(ordering: .relaxed) {
                let reply = try? server.call(
                    "POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "a wrong guess \#(index)"}"#,
                    headers: [("X-Forwarded-For", "198.51.100.66")])
                flood.withLock { $0.append(reply?.status ?? -1) }
                if reply?.status == 503 { #expect(reply?.json["code"] == "overloaded") }
            }
        }
        server.acceptServerErrors(503)
        let floodCounts = tally(flood.withLock { $0 })
        #expect(floodCounts[503, default: 0] > 0 && floodCounts[401, default: 0] > 0, "the flood: \(floodCounts)")
        #expect(users.withLock { $0 } == [200, 200, 200, 200], "sign-ins from another address during the flood: \(floodCounts)")
    }

    /// Reset confirmations count per client address, a dead token's too, with the sign-in's rule:
    /// an address past it is `429`, and another address is not.
    @Test func resetConfirmationsAreThrottledPerAddress() throws {
        let smtp = try TestSMTPServer()
        let server = try RecoveryAPITests.server("reset_confirm_throttle", smtp: smtp) { configuration in
            configuration.trustedProxies = ["127.0.0.1"]
            configuration.accounts.signInPerAddress = ThrottleRule(limit: 3, windowSeconds: 900)
        }
        defer { server.shutdown() }
        let account = try server.register()
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let mail = try smtp.waitForMessages(where: { RecoveryAPITests.isTo(account.email)($0) && $0.contains("/reset-password#") })[0]
        let token = try RecoveryAPITests.token(in: mail)
        func confirm(_ token: String, from address: String) throws -> Reply {
            try server.call(
                "POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "\#(server.uniquePassword())"}"#,
                headers: [("X-Forwarded-For", address)])
        }
        let guesser = "203.0.113.77"
        // Well-formed guesses (43 base64url characters, the last with its 2 unused bits zero), so that each is looked up.
        for last in ["A", "E", "I"] {
            #expect(try confirm(String(repeating: "A", count: 42) + last, from: guesser).json["code"] == "invalid_reset_token")
        }
        let locked = try confirm(token, from: guesser)
        #expect(locked.status == 429, "\(locked.text)")
        #expect((Int(locked.header("Retry-After") ?? "") ?? 0) > 0)
        // The same live link from another address works: the guesser's limit is its own.
        let done = try confirm(token, from: "192.0.2.8")
        #expect(done.status == 200, "\(done.text)")
        if let session = done.json["accessToken"]?.stringValue { server.remember(token: session) }
    }
}
