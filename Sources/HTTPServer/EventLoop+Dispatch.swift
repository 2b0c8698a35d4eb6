import HTTP
import Threads

// Requests on an event loop: routing a parsed request to its handler (inline, on the loop through
// a `Responder`, or on the worker pool), the admission of large bodies, and the answer's way back.
extension EventLoop {
    func dispatch(_ request: Request, on connection: Connection) -> ConnectionStateMachine.Action {
        let now = System.now()
        let requestID = connection.admittedRequestID ?? nextRequestID(from: request.headers["X-Request-Id"])
        connection.admittedRequestID = nil
        switch connection.routes.match(request.method, request.path) {
        case .notFound:
            connection.startRequest(id: requestID, method: request.method.rawValue, route: nil, now: now)
            return finish(Problem.notFound().response(), on: connection)
        case .notImplemented:
            connection.startRequest(id: requestID, method: request.method.rawValue, route: nil, now: now)
            return finish(
                Problem(
                    status: .notImplemented, code: .methodNotImplemented,
                    detail: "The request method is not implemented."
                ).response(), on: connection)
        case .methodNotAllowed(let allow):
            connection.startRequest(id: requestID, method: request.method.rawValue, route: nil, now: now)
            return finish(Problem.methodNotAllowed(allow: allow).response(), on: connection)
        case .found(let route, let parameters):
            connection.startRequest(id: requestID, method: request.method.rawValue, route: route, now: now)
            // Only work on the worker pool can outlive its client for long (hashing, queued).
            let cancellation = route.asynchronousHandler == nil && route.execution == .blocking ? Cancellation() : nil
            connection.cancellation = cancellation
            let context = RequestContext(
                requestID: requestID, parameters: parameters,
                remoteAddress: connection.remoteAddress,
                cancellation: cancellation,
                deadline: RequestDeadline(uptimeNanoseconds: now &+ shared.configuration.requestDeadline.nanoseconds),
                logger: shared.logger)
            if let asynchronous = route.asynchronousHandler {
                shared.metrics.requestStarted()
                let responder = Responder(
                    loop: LoopContext(loop: self), token: connection.token, route: route,
                    request: request, context: context)
                asynchronous(request, context, responder)
                responder.handlerReturned()
                if let response = responder.immediate {
                    shared.metrics.requestFinished()
                    return finish(response, on: connection)
                }
                return .none
            }
            switch route.execution {
            case .inline:
                return finish(shared.run(route, request, context), on: connection)
            case .blocking:
                if !submit(route, request, context, token: connection.token) {
                    return finish(Problem.serviceUnavailable().response(), on: connection)
                }
                return .none
            }
        }
    }

    /// Runs the route's admission check for `head` on the worker pool; the body is read, or the
    /// request refused, once it has answered (`admissionDecided`).
    func admit(_ head: RequestHead, on connection: Connection) -> ConnectionStateMachine.Action {
        guard case .found(let route, let parameters) = connection.routes.match(head.method, head.path),
            let admission = route.admission
        else {
            return connection.machine.admitted(now: System.now())
        }
        // The check has a deadline of its own; the request gets its deadline once its body is read.
        let context = RequestContext(
            requestID: nextRequestID(from: head.headers["X-Request-Id"]), parameters: parameters,
            remoteAddress: connection.remoteAddress, deadline: RequestDeadline.after(shared.configuration.requestDeadline),
            logger: shared.logger)
        connection.admittedRequestID = context.requestID
        let token = connection.token
        let shared = self.shared
        let submitted = shared.workers.submit { [self] in
            var refusal: Response?
            do {
                try RequestDeadline.with(context.deadline) { try admission(head, context) }
            } catch {
                refusal = shared.response(for: route, context) { throw error }
            }
            let decided = refusal
            execute { [self] in admissionDecided(token: token, route: route, context: context, refusal: decided) }
        }
        if !submitted {
            connection.machine.refused()
            connection.startRequest(id: context.requestID, method: head.method.rawValue, route: route, now: System.now())
            return finish(Problem.serviceUnavailable().response(), on: connection)
        }
        return .none
    }

    func admissionDecided(token: UInt64, route: Router.Route, context: RequestContext, refusal: Response?) {
        guard let connection = connection(for: token) else { return }
        guard let refusal else {
            perform(connection.machine.admitted(now: System.now()), on: connection)
            return
        }
        connection.machine.refused()
        connection.startRequest(id: context.requestID, method: route.method.rawValue, route: route, now: System.now())
        perform(finish(refusal, on: connection), on: connection)
    }

    /// Runs the route's blocking handler on the worker pool and answers from this loop; false
    /// when the pool's queue is full. `counted`: the request is in flight already (an asynchronous
    /// handler falling back), so only its end is counted.
    ///
    /// The handler runs with the request's deadline as its thread's (`RequestDeadline`), so that
    /// every wait in it ends by then; a request that waited for a worker until its deadline is
    /// answered `503` without running.
    func submit(
        _ route: Router.Route, _ request: Request, _ context: RequestContext, token: UInt64,
        counted: Bool = false
    ) -> Bool {
        let shared = self.shared
        return shared.workers.submit { [self] in
            if !counted { shared.metrics.requestStarted() }
            let response: Response
            if context.deadline?.hasPassed == true {
                response = Problem.serviceUnavailable(detail: "The server is too busy to answer in time; try again shortly.").response()
            } else {
                response = RequestDeadline.with(context.deadline) {
                    shared.response(for: route, context) { try route.handler(request, context) }
                }
            }
            // Counted here, not on the loop: a loop that ends at its drain deadline runs no more tasks.
            shared.metrics.requestFinished()
            execute { [self] in deliver(response, token: token) }
        }
    }

    /// An asynchronous handler's later answer.
    func complete(token: UInt64, with response: Response) {
        shared.metrics.requestFinished()
        deliver(response, token: token)
    }

    func deliver(_ response: Response, token: UInt64) {
        guard let connection = connection(for: token) else { return }
        perform(finish(response, on: connection), on: connection)
    }

    /// Reserves the rest of the body the connection's request announced (or has sent so far,
    /// chunked) against the server's cap on bodies held at once; false past the cap.
    func reserveBody(_ connection: Connection) -> Bool {
        let wanted = connection.machine.expectedBodyBytes
        guard shared.reserveBodyBytes(wanted - connection.reservedBodyBytes) else { return false }
        connection.reservedBodyBytes = wanted
        return true
    }

    func finish(_ response: Response, on connection: Connection) -> ConnectionStateMachine.Action {
        // The request's body is no longer held once it is answered.
        shared.releaseBodyBytes(connection.reservedBodyBytes)
        connection.reservedBodyBytes = 0
        connection.cancellation = nil
        var response = response
        response.headers.replaceOrAdd(name: "X-Request-Id", value: connection.requestID)
        connection.status = response.status.code
        return connection.machine.respond(response, date: date, now: System.now())
    }
}
