import CLibPQ
import Glibc
import Threads

/// A message of PostgreSQL's `NOTIFY` (`pg_notify`), delivered when its transaction commits.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process that sent it.
    public let processID: Int32

    public init(channel: String, payload: String, processID: Int32) {
        self.channel = channel
        self.payload = payload
        self.processID = processID
    }
}

extension PostgresConnection {
    /// Subscribes this connection to `channel` (`LISTEN`), a fixed name: letters, digits and
    /// underscores. Needs a connection of its own (a pooler in transaction mode cannot carry it).
    public func listen(to channel: StaticString) throws {
        let name = String(decoding: UnsafeBufferPointer(start: channel.utf8Start, count: channel.utf8CodeUnitCount), as: UTF8.self)
        precondition(
            !name.isEmpty && name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) },
            "a channel is a lowercase identifier")
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        _ = try check(awaitResult(PQsendQuery(handle, "LISTEN \(name)")))
    }

    /// The notifications that came, waiting up to `timeout` for the first one; empty when none
    /// came in time. Throws `connectionFailed` once the connection is lost: notifications sent
    /// meanwhile are gone, and the caller must catch up some other way.
    public func notifications(waitingAtMost timeout: Duration) throws -> [PostgresNotification] {
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        var received = takeNotifications()
        if !received.isEmpty { return received }
        let deadline = monotonicNanoseconds() + timeout.nanoseconds
        while received.isEmpty {
            let now = monotonicNanoseconds()
            guard now < deadline else { break }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            guard descriptor.fd >= 0 else { throw lost() }
            let ready = poll(&descriptor, 1, Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000)))
            if ready < 0, errno == EINTR { continue }
            if ready < 0 { throw lost() }
            if ready == 0 { break }
            guard PQconsumeInput(handle) == 1 else { throw lost() }
            // A server on its way out sends an error (57P01) and closes: the connection is not OK.
            guard PQstatus(handle) == CONNECTION_OK else { throw lost() }
            received = takeNotifications()
            // Readable with nothing to take but not lost: an EOF shows as a failed consume next time.
            if received.isEmpty, descriptor.revents & Int16(POLLHUP | POLLERR) != 0 { throw lost() }
        }
        return received
    }

    private func takeNotifications() -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notification = PQnotifies(handle) {
            let message = notification.pointee
            received.append(
                PostgresNotification(channel: String(cString: message.relname), payload: String(cString: message.extra), processID: message.be_pid))
            PQfreemem(notification)
        }
        return received
    }

    private func lost() -> PostgresError {
        isBroken = true
        return PostgresError(code: .connectionFailed, context: "the notification connection was lost: \(errorMessage)")
    }
}
