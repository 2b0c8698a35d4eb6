import FoundationEssentials
import HTTP
import Synchronization

/// A route's cap on what one user holds open at once on this instance (event streams): the table
/// takes a place before the handler runs and keeps it for as long as the response's stream lives
/// (`Held`), or gives it back with the answer when there is no stream.
final class OpenPerUser: Sendable {
    let limit: Int
    private let open = Mutex<[UUID: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// A place for `user`, or nil when they hold `limit` already.
    func take(_ user: UUID) -> Place? {
        let taken = open.withLock { open -> Bool in
            guard open[user, default: 0] < limit else { return false }
            open[user, default: 0] += 1
            return true
        }
        return taken ? Place(cap: self, user: user) : nil
    }

    fileprivate func release(_ user: UUID) {
        open.withLock { open in
            open[user, default: 1] -= 1
            if open[user] == 0 { open.removeValue(forKey: user) }
        }
    }

    /// One place, given back when the last reference to it goes.
    final class Place: Sendable {
        private let cap: OpenPerUser
        private let user: UUID

        fileprivate init(cap: OpenPerUser, user: UUID) {
            self.cap = cap
            self.user = user
        }

        deinit { cap.release(user) }
    }

    /// A response's event stream that holds its place until the stream goes (the client left,
    /// the stream ended, the server closed the connection).
    final class Held: ResponseEventStream {
        private let stream: any ResponseEventStream
        private let place: Place

        init(_ stream: any ResponseEventStream, _ place: Place) {
            self.stream = stream
            self.place = place
        }

        func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
            stream.next(completion)
        }

        var sendBufferBytes: Int? { stream.sendBufferBytes }
    }
}
