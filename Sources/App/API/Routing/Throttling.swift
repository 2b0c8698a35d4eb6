import Accounts
import FoundationEssentials
import HTTP

/// A route's throttle, declared with it: the action its counters count, what each counter is
/// kept per (a subject taken from the route's decoded body and its principal), and what a success
/// does with the attempt. The table counts the attempt before the handler runs, so a route that
/// declares a throttle cannot skip it, and nothing else counts one (`PolicyChain.throttled`).
///
/// An attempt refused by a full counter is `429 too_many_attempts` with `Retry-After`, and the
/// handler does not run. One the handler refuses as malformed or could not judge (the hashing
/// pool full, the client gone, a provider's keys out of reach: `Throttling.countsAsAttempt`)
/// is given back; one it judged (a wrong password, a dead token) stays counted.
struct Throttling<Body: Sendable>: Sendable {
    let action: ThrottleAction
    let counters: [Counter]
    let success: Success
    /// Whether a request only reads its counters: refused while one is full, as a counted one
    /// would be, but counting nothing (`HEAD` of what `GET` counts).
    let checksOnly: (@Sendable (Body, Call) -> Bool)?

    init(
        _ action: ThrottleAction, _ counters: [Counter], success: Success = .counts, checksOnly: (@Sendable (Body, Call) -> Bool)? = nil
    ) {
        self.action = action
        self.counters = counters
        self.success = success
        self.checksOnly = checksOnly
    }

    /// What a success does with its attempt.
    enum Success: Sendable, Equatable {
        /// It stays counted: the throttle limits the action itself (registrations, mail).
        case counts
        /// It is given back, and the counter of `clearing`'s kind is cleared: the throttle limits
        /// failures (guesses), and a success proves the owner.
        case givesBack(clearing: RoutePolicy.Throttle? = nil)
    }

    /// One counter: its kind (what `exosphere routes` shows) and its subject, or nil when this
    /// request counts nothing on it.
    struct Counter: Sendable {
        let kind: RoutePolicy.Throttle
        /// The action this counter counts instead of the throttle's, whose every success stays
        /// counted (`perUser(counting:)`): a second limit, on the action itself.
        var action: ThrottleAction? = nil
        let subject: @Sendable (Body, Call) async throws -> ThrottleSubject?

        /// The signed-in user, on `action`, successes included: a limit on how often a route that
        /// otherwise counts only failures may succeed (each password change mails a notice).
        static func perUser(counting action: ThrottleAction) -> Counter {
            Counter(kind: .perUser, action: action) { _, call in .user(call.signedIn.user.id) }
        }

        /// The client address (IPv6: its /64).
        static var perAddress: Counter { Counter(kind: .perAddress) { _, call in .address(call.origin.throttleAddress) } }

        /// The signed-in user.
        static var perUser: Counter { perUser { _, _ in true } }

        /// The user a request names without a session (the owner of a sign-in's challenge), when
        /// it names one.
        static func perUser(of user: @escaping @Sendable (Body, Call) -> UUID?) -> Counter {
            Counter(kind: .perUser) { body, call in user(body, call).map { .user($0) } }
        }

        /// The signed-in user, for a request that `counts`.
        static func perUser(when counts: @escaping @Sendable (Body, Call) -> Bool) -> Counter {
            Counter(kind: .perUser) { body, call in counts(body, call) ? .user(call.signedIn.user.id) : nil }
        }

        /// An email text the body names (`ThrottleSubject.emailID`), from every address together.
        static func perEmail(_ email: @escaping @Sendable (Body, Call) async throws -> String?) -> Counter {
            Counter(kind: .perEmail) { body, call in try await email(body, call).map { .email(ThrottleSubject.emailID($0)) } }
        }

        /// An email text the body names, from the client's address: the owner rule.
        static func perEmailAndAddress(_ email: @escaping @Sendable (Body) -> String) -> Counter {
            Counter(kind: .perEmailAndAddress) { body, call in
                .emailAndAddress(email: ThrottleSubject.emailID(email(body)), address: call.origin.throttleAddress)
            }
        }
    }

    /// Password guesses of a sign-in (a user's or an administrator's): per email from one client
    /// address (the owner rule), per email (but for a client known to have signed in as it
    /// before, so that strangers cannot lock its owner out) and per address; a success gives its
    /// attempt back and clears its address's count.
    static func passwordGuesses(_ action: ThrottleAction) -> Throttling<SignInAttempt> {
        Throttling<SignInAttempt>(
            action, [.perEmailAndAddress(\.email), .perEmail { attempt, _ in attempt.fromKnownClient ? nil : attempt.email }, .perAddress],
            success: .givesBack(clearing: .perEmailAndAddress))
    }

    /// The kinds of its counters, as the route's policy lists them.
    var kinds: Set<RoutePolicy.Throttle> { Set(counters.map(\.kind)) }

    /// Whether a failure of the handler keeps its attempt counted: it judged the attempt. A body
    /// or value refused before any judgement, work refused or abandoned before it ran, and any
    /// failure of the server give it back.
    static func countsAsAttempt(_ error: any Error) -> Bool {
        guard let error = error as? AccountsError else { return false }
        switch error.code {
        case .invalidJSON, .unknownField, .invalidType, .invalidValue, .invalidEmail, .weakPassword, .passwordNotAllowed,
            .passwordUnchanged, .passwordMismatch, .fieldLimitReached, .overloaded, .cancelled, .providerUnavailable,
            // The first factor was right: the second is counted by its own route.
            .mfaRequired:
            return false
        default:
            return true
        }
    }
}
