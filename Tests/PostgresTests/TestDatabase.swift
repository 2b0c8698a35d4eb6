import TestSupport
import Glibc
import Postgres
import PostgresCluster
import Synchronization

/// The one throwaway cluster of this test target: started on first use, stopped at process exit
/// (LocalCluster's atexit handler, or its watchdog if the run is killed).
enum TestDatabase {
    static let started: Result<LocalCluster, any Error> = Result {
        var options = LocalCluster.Options()
        options.settings["deadlock_timeout"] = "100ms"
        return try LocalCluster.startTemporary(options: options)
    }
    static let sharedPool: Result<PostgresPool, any Error> = Result {
        PostgresPool(configuration: try cluster().configuration(), size: 8, acquireTimeout: .seconds(20))
    }
    static let counter = Atomic<Int>(0)

    static func cluster() throws -> LocalCluster { try started.get() }

    /// A pool on the shared database; tests keep apart by using `uniqueName` for their tables.
    static func pool() throws -> PostgresPool { try sharedPool.get() }

    /// A fresh connection to the shared database.
    static func connection(_ adjust: (inout PostgresConfiguration) -> Void = { _ in }) throws -> PostgresConnection {
        var configuration = try cluster().configuration()
        adjust(&configuration)
        return try PostgresConnection(configuration: configuration)
    }

    /// A name no other test in this run uses.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(getpid())_\(counter.add(1, ordering: .relaxed).newValue)"
    }
}

/// The elapsed time of `body`.
func measure(_ body: () throws -> Void) rethrows -> Duration {
    let start = ContinuousClock.now
    try body()
    return ContinuousClock.now - start
}

/// The PostgresError `body` throws, or nil.
func postgresError(_ body: () throws -> Void) -> PostgresError? {
    do {
        try body()
        return nil
    } catch let error as PostgresError {
        return error
    } catch {
        return nil
    }
}
