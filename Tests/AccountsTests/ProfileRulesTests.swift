import Accounts
import Cryptography
import FoundationEssentials
import JSON
import Migrations
import Postgres
import PostgresCluster
import StructuredLogging
import TestSupport
import Testing

/// The account rules through `AccountService` on a real PostgreSQL, without HTTP: typed inputs in,
/// users and `AccountsError`s out, every statement run by a `PooledExecutor`.
@Suite(.testThreads) struct ProfileRulesTests {
    let accounts: AccountService
    let executor: PooledExecutor

    init() throws {
        let pool = try DomainDatabase.pool()
        executor = PooledExecutor(pool)
        accounts = AccountService(
            pool: pool, hasher: try PasswordHasher(parameters: .testing, allowWeakParameters: true),
            hashing: DomainDatabase.hashing, logger: .silent)
    }

    private let origin = RequestOrigin(address: "127.0.0.1", throttleAddress: "127.0.0.1", userAgent: nil)

    private func newUser(data: JSONObject = JSONObject()) throws -> User {
        let email = EmailAddress("u\(UInt32.random(in: 0 ... .max))-\(UInt32.random(in: 0 ... .max))@example.com")!
        // As `POST /users` declares it: the route table sets the hashing lane.
        return try HashingLane.$declared.withValue(.bulk) {
            try accounts.passwordSignIn.register(Registration(email: email, password: "correct horse battery", data: data), origin: origin).user
        }
    }

    private func patch(_ patch: ProfilePatch, of user: User, condition: WriteCondition = .any) async throws -> User {
        try await accounts.profiles.patchProfile(patch, of: user, condition: condition, origin: origin, on: executor)
    }

    private func replace(_ replacement: ProfileReplacement, of user: User, condition: WriteCondition = .any) async throws -> User {
        try await accounts.profiles.replaceProfile(replacement, of: user, condition: condition, origin: origin, on: executor)
    }

    private func code(_ body: () async throws -> Void) async -> AccountsError.Code? {
        do {
            try await body()
            return nil
        } catch let error as AccountsError {
            return error.code
        } catch {
            Issue.record("not an AccountsError: \(error)")
            return nil
        }
    }

    @Test func aPatchMergesIntoTheStoredUserAndBumpsTheVersion() async throws {
        let user = try newUser(data: ["a": 1])
        let patched = try await patch(ProfilePatch(firstname: "Ada", data: ["b": "two"]), of: user)
        #expect(patched.firstname == "Ada")
        #expect(patched.data == ["a": 1, "b": "two"])
        #expect(patched.version == user.version + 1)
        #expect(patched.etag != user.etag)
    }

    /// A patch computed from a user read before another write merges into what is stored now.
    @Test func aPatchOnAStaleReadMergesIntoTheNewVersion() async throws {
        let user = try newUser()
        _ = try await patch(ProfilePatch(data: ["first": true]), of: user)
        let patched = try await patch(ProfilePatch(data: ["second": true]), of: user)
        #expect(patched.data == ["first": true, "second": true])
        #expect(patched.version == user.version + 2)
    }

    @Test func aConditionThatNamesNoCurrentVersionChangesNothing() async throws {
        let user = try newUser()
        let current = try await patch(ProfilePatch(firstname: "B"), of: user)
        #expect(await code { _ = try await patch(ProfilePatch(firstname: "C"), of: user, condition: .matching([user.etag])) } == .preconditionFailed)
        #expect(
            await code {
                _ = try await replace(
                    ProfileReplacement(email: EmailAddress(user.email!)!), of: current,
                    condition: .matching([]))
            } == .preconditionFailed)
        let after = try await patch(ProfilePatch(), of: current, condition: .matching(["\"other\"", current.etag]))
        #expect(after.firstname == "B")
        #expect(after.version == current.version + 1)
    }

    @Test func aReplacementKeepsOnlyWhatItNames() async throws {
        let user = try newUser(data: ["kept": 1])
        let replaced = try await replace(ProfileReplacement(email: EmailAddress("NEW-" + user.email!)!, lastname: "L", data: ["x": 2.5]), of: user)
        #expect(replaced.data == ["x": 2.5])
        #expect(replaced.lastname == "L")
        #expect(replaced.email == user.email, "another address waits for its proof")
        #expect(replaced.pendingEmail == "NEW-" + user.email!)
    }

    /// The first write of a field fixes its type; a refused write fixes none.
    @Test func fieldTypesAreFixedByTheFirstCommittedWrite() async throws {
        let user = try newUser()
        let name = "rule\(UInt32.random(in: 0 ... .max))"
        // Refused (another field is invalid): the new name's type is not fixed.
        #expect(await code { _ = try await patch(ProfilePatch(data: [name: 1, "bad name": 2]), of: user) } == .invalidValue)
        _ = try await patch(ProfilePatch(data: [name: "text"]), of: user)
        #expect(try accounts.profiles.fieldTypes()[name] == .string)
        #expect(await code { _ = try await patch(ProfilePatch(data: [name: 3]), of: user) } == .invalidType)
    }

    @Test func anotherUsersEmailIsTaken() async throws {
        let first = try newUser()
        let second = try newUser()
        #expect(await code { _ = try await patch(ProfilePatch(email: EmailAddress(first.email!.uppercased())!), of: second) } == .emailTaken)
    }

    @Test func tooManyFieldsAreRefusedBeforeAnyIsClaimed() async throws {
        let user = try newUser()
        var data = JSONObject()
        for index in 0...accounts.configuration.fieldLimits.maxFields { data["many\(index)"] = "v" }
        #expect(await code { _ = try await patch(ProfilePatch(data: data), of: user) } == .invalidValue)
        #expect(try accounts.profiles.fieldTypes()["many0"] == nil)
    }

    @Test func aTokenThatIsNoSessionIsInvalid() async {
        #expect(await code { _ = try await accounts.sessions.authenticate(token: "not-a-token", withSession: false, on: executor) } == .invalidToken)
        #expect(
            await code { _ = try await accounts.sessions.authenticate(token: String(repeating: "A", count: 43), withSession: false, on: executor) }
                == .invalidToken)
    }
}

/// This target's throwaway cluster, migrated, and a hashing pool.
enum DomainDatabase {
    /// The cluster stops when its value goes: it is kept for the whole run.
    static let started: Result<(LocalCluster, PostgresPool), any Error> = Result {
        let cluster = try LocalCluster.startTemporary()
        let pool = PostgresPool(configuration: try cluster.configuration(), size: 4, acquireTimeout: .seconds(20))
        _ = try Migrator(files: EmbeddedMigrations.files).migrate(on: pool)
        return (cluster, pool)
    }
    static let hashing = HashingPool(workers: 2, queueCapacity: 64)

    static func pool() throws -> PostgresPool { try started.get().1 }
}
