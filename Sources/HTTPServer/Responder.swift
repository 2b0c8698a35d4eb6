import HTTP

/// How an asynchronous handler answers its request: exactly once, on the thread of the event loop
/// the request arrived on; now, from inside the handler, or later, from a `LoopSource` callback.
public final class Responder {
    private enum State {
        /// The handler is still running: an answer now is returned by the dispatch itself.
        case dispatching
        /// The handler returned without answering; something on the loop will.
        case waiting
        case answered
    }

    /// The event loop the request arrived on, for its sources and loop-local state.
    public let loop: LoopContext
    private let token: UInt64
    private let route: Router.Route
    private let request: Request
    private let context: RequestContext
    private var state = State.dispatching
    /// An answer given while dispatching; handed to the connection when the handler returns.
    private(set) var immediate: Response?

    init(loop: LoopContext, token: UInt64, route: Router.Route, request: Request, context: RequestContext) {
        self.loop = loop
        self.token = token
        self.route = route
        self.request = request
        self.context = context
    }

    /// Answers with `response`. Later calls are ignored.
    public func respond(_ response: Response) {
        switch state {
        case .answered:
            return
        case .dispatching:
            immediate = response
            state = .answered
        case .waiting:
            state = .answered
            loop.loop.complete(token: token, with: response)
        }
    }

    /// Answers with what `body` returns, or with the problem its error maps to, exactly as a
    /// blocking handler's error is answered.
    public func respond(_ body: () throws -> Response) {
        respond(loop.loop.shared.response(for: route, context, body))
    }

    /// Hands the request to the route's blocking handler on the worker pool (`503` when the pool
    /// is full), for when the fast path cannot answer: its connection is down, say.
    public func fallBack() {
        guard state != .answered else { return }
        let previous = state
        state = .answered
        if !loop.loop.submit(route, request, context, token: token, counted: true) {
            state = previous
            respond(Problem.serviceUnavailable().response())
        }
    }

    /// Called by the loop once the handler has returned.
    func handlerReturned() {
        if state == .dispatching { state = .waiting }
    }
}

@available(*, unavailable, message: "a responder belongs to its event loop's thread")
extension Responder: Sendable {}
