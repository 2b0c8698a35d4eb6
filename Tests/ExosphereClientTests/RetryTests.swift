import ExosphereClient
import Foundation
import TestSupport
import Testing

/// A server at its limit: one hashing thread and no queue, so sign-ins sent together are
/// refused with `503 overloaded` and `Retry-After: 1`, except the one being hashed.
@Suite(
    .testThreads,
    .liveServer("overloaded") { configuration in
        configuration.passwordHashing = .owaspCompact  // a real hash takes long enough for the others to arrive
        configuration.hashingThreads = 1
        configuration.hashingQueue = 0
    }, .serialized)
struct OverloadRetryTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// Three sign-ins at once; their clients use `policy`. The statuses the server answered are
    /// counted from its metrics.
    func signInsTogether(_ policy: Client.RetryPolicy) async throws -> (results: [Result<User, any Error>], refused: Int) {
        let email = server.uniqueEmail()
        try await server.client().register(email: email, password: "correct horse battery")
        let clients = try (0..<3).map { _ in try server.client { $0.retryPolicy = policy } }
        let refusedBefore = try await server.requests("POST", "/users/signin", 503)
        let results = await withTaskGroup(of: Result<User, any Error>.self) { group in
            for client in clients {
                group.addTask {
                    do {
                        return .success(try await client.signIn(email: email, password: "correct horse battery"))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        return (results, try await server.requests("POST", "/users/signin", 503) - refusedBefore)
    }

    @Test func withoutRetriesTheServersRefusalReachesTheApp() async throws {
        let (results, refused) = try await signInsTogether(.never)
        let errors = results.compactMap { result -> ExosphereError? in
            guard case .failure(let error) = result else { return nil }
            #expect(error is ExosphereError, "\(error)")
            return error as? ExosphereError
        }
        #expect(!errors.isEmpty, "sign-ins sent together to one hashing thread")
        #expect(errors.count == refused)
        for error in errors {
            #expect(error.status == 503)
            #expect(error.code == .overloaded)
            #expect(error.retryAfter == 1)
        }
    }

    @Test func retriesAfterRetryAfterGetEverySignInThrough() async throws {
        let start = Date()
        // Many more retries than the default 3: hashing runs in the idle scheduling class, and on
        // a busy machine (the whole test suite on two cores) one hash can outlast several seconds.
        let (results, refused) = try await signInsTogether(Client.RetryPolicy(maxRetries: 30))
        for result in results {
            #expect(throws: Never.self) { try result.get() }
        }
        #expect(refused >= 1, "the server refused some and the client tried them again")
        #expect(Date().timeIntervalSince(start) >= 1, "after the Retry-After second")
    }
}

/// Throttles: `429` is retried when `Retry-After` is short, thrown at once when it is long.
@Suite(
    .testThreads,
    .liveServer("throttled") { configuration in
        configuration.accounts.signInPerEmailAndAddress.limit = 2
        // Long enough that the attempts fit in it on a loaded machine; the test that waits a lock out
        // moves the window's start back rather than waiting a minute.
        configuration.accounts.signInPerEmailAndAddress.windowSeconds = 60
    }, .serialized)
struct ThrottleRetryTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    @Test func aShortLockIsWaitedOut() async throws {
        let (_, email, password) = try await server.signedInClient()
        let client = try server.client { $0.retryPolicy = .never }
        for _ in 0..<2 {
            let wrong = await exosphereError { try await client.signIn(email: email, password: "not the password") }
            #expect(wrong?.code == .invalidCredentials)
        }
        let locked = await exosphereError { try await client.signIn(email: email, password: password) }
        #expect(locked?.status == 429)
        #expect(locked?.code == .tooManyAttempts)
        let wait = try #require(locked?.retryAfter)
        #expect(wait >= 1 && wait <= 60)
        let patient = try server.client()
        let throttled = try await server.requests("POST", "/users/signin", 429)
        // Four seconds left of the lock, and the patient client's first attempt follows at once
        // (no suspension point between them).
        let moved = try server.withDatabase { connection in
            try connection.execute(
                """
                UPDATE auth_throttles SET window_start = now() - interval '56 seconds' WHERE key LIKE \("signin:pair:" + email.lowercased() + " %")
                """)
        }
        #expect(moved == 1)

        // The default policy waits those seconds and signs in.
        try await patient.signIn(email: email, password: password)
        #expect(try await server.requests("POST", "/users/signin", 429) >= throttled + 1, "it was refused first")
    }

    @Test func aLongLockIsThrownAtOnceWithItsRetryAfter() async throws {
        let (_, email, password) = try await server.signedInClient()
        let client = try server.client { $0.retryPolicy.maxRetryAfter = 0.5 }
        for _ in 0..<2 {
            _ = await exosphereError { try await client.signIn(email: email, password: "not the password") }
        }
        let throttled = try await server.requests("POST", "/users/signin", 429)
        let locked = await exosphereError { try await client.signIn(email: email, password: password) }
        #expect(locked?.code == .tooManyAttempts)
        #expect(try #require(locked?.retryAfter) > 0.5)
        #expect(
            try await server.requests("POST", "/users/signin", 429) == throttled + 1,
            "a Retry-After over maxRetryAfter is not waited for")
    }
}

/// A server that accepts connections and never answers.
@Suite(.testThreads) struct TimeoutTests {
    @Test func aServerThatDoesNotAnswerFailsAfterTheTimeoutWithoutRetries() async throws {
        let listener = try SilentListener(backlog: 8)
        defer { listener.close() }
        var configuration = Client.Configuration()
        configuration.timeoutInterval = 1  // FoundationNetworking on Linux times out at once below a second
        configuration.imageCacheEnabled = false
        let client = Client(
            baseURL: URL(string: "http://127.0.0.1:\(listener.port)")!, sessionStore: InMemorySessionStore(),
            configuration: configuration)
        let start = Date()
        let error = await exosphereError { try await client.signIn(email: "ayu@example.com", password: "correct horse battery") }
        let elapsed = Date().timeIntervalSince(start)
        #expect(error?.code == .networkError)
        #expect(error?.status == nil)
        #expect((error?.underlyingError as? URLError)?.code == .timedOut)
        // One attempt: one connection waits in the listener's backlog (a retry would have opened another).
        #expect(listener.takePendingConnections() == 1)
        #expect(elapsed >= 0.9, "\(elapsed) s")
    }
}
