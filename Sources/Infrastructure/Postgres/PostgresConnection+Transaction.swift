import CLibPQ
import Glibc

/// The isolation level of a transaction.
public enum PostgresIsolationLevel: Sendable, Hashable {
    case readCommitted
    case repeatableRead
    case serializable
}

extension PostgresConnection {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// With `retries > 0`, a serialization failure (40001) or deadlock (40P01) — in the body or at
    /// COMMIT — rolls back and runs the whole body again, up to `retries` more times, after a short
    /// randomised pause. The body must therefore be safe to repeat (no side effects outside SQL).
    public func withTransaction<Result>(
        isolation: PostgresIsolationLevel? = nil,
        retries: Int = 0,
        _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        var attempt = 0
        while true {
            do {
                return try transaction(isolation: isolation, body)
            } catch let error as PostgresError where error.isTransient && attempt < retries && isUsable {
                attempt += 1
                // Spread the retries of conflicting transactions apart.
                usleep(UInt32.random(in: 500...2_000) * UInt32(attempt))
            }
        }
    }

    func transaction<Result>(
        isolation: PostgresIsolationLevel?, _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        guard !isInTransaction else {
            throw PostgresError(code: .invalidUsage, context: "withTransaction inside a transaction (nesting is not supported)")
        }
        switch isolation {
        case nil: try simpleCommand("BEGIN")
        case .readCommitted: try simpleCommand("BEGIN ISOLATION LEVEL READ COMMITTED")
        case .repeatableRead: try simpleCommand("BEGIN ISOLATION LEVEL REPEATABLE READ")
        case .serializable: try simpleCommand("BEGIN ISOLATION LEVEL SERIALIZABLE")
        }
        let result: Result
        do {
            result = try body(self)
        } catch {
            rollbackAfterFailure()
            throw error
        }
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            // The body swallowed a failed statement; COMMIT would silently roll back.
            rollbackAfterFailure()
            throw PostgresError(code: .queryFailed, context: "the transaction was aborted by an earlier failed statement")
        }
        do {
            try simpleCommand("COMMIT")
        } catch {
            rollbackAfterFailure()
            throw error
        }
        return result
    }

    /// Best effort: the original error is what the caller needs; a connection that cannot roll
    /// back is left in a transaction and the pool discards it.
    func rollbackAfterFailure() {
        guard isUsable, isInTransaction else { return }
        do { try simpleCommand("ROLLBACK") } catch { /* the pool discards the connection */  }
    }
}
