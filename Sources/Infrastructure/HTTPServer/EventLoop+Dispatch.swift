import HTTP
import Threads

// Requests on an event loop: routing a parsed request to its handler, run as a task on the
// route's executor (this loop's, or the worker pool), the admission of large bodies, and the
// answer's way back.
extension EventLoop {
    func dispatch(_ request: Request, on connection: Connection) -> ConnectionStateMachine.Action {
        let now = System.now()
        let requestID = connection.admittedRequestID ?? nextRequestID(from: request.headers["X-Request-Id"])
        let admitted = connection.admitted
        connection.admittedRequestID = nil
        connection.admitted = nil
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
            let cancellation = route.execution == .workers ? Cancellation() : nil
            connection.cancellation = cancellation
            let context = RequestContext(
                requestID: requestID, parameters: parameters,
                remoteAddress: connection.remoteAddress,
                cancellation: cancellation,
                deadline: RequestDeadline(uptimeNanoseconds: now &+ shared.configuration.requestDeadline.nanoseconds),
                loop: LoopContext(loop: self), admitted: admitted,
                logger: shared.logger)
            guard start(route, request, context, token: connection.token) else {
                return finish(Problem.serviceUnavailable().response(), on: connection)
            }
            return .none
        }
    }

    /// Starts the route's handler as a task on the route's executor, answering on this loop once
    /// it returns; false when it runs on the worker pool and the pool's queue is full.
    ///
    /// The task runs with the request's deadline (`RequestDeadline`), so that every wait in it
    /// ends by then; a request that waited for a worker until its deadline is answered `503`
    /// without running.
    private func start(_ route: Router.Route, _ request: Request, _ context: RequestContext, token: UInt64) -> Bool {
        let executor: any TaskExecutor
        switch route.execution {
        case .loop:
            executor = jobs
        case .workers:
            guard shared.workers.admitsTask() else { return false }
            executor = shared.workers
        }
        let shared = self.shared
        shared.metrics.requestStarted()
        Task(executorPreference: executor) { [self] in
            let response: Response
            if route.execution == .workers, context.deadline?.hasPassed == true {
                response = Problem.serviceUnavailable(detail: "The server is too busy to answer in time; try again shortly.").response()
            } else {
                response = await RequestDeadline.with(context.deadline) {
                    await shared.response(for: route, context) { try await route.handler(request, context) }
                }
            }
            // Counted here, not on the loop: a loop that ends at its drain deadline runs no more tasks.
            shared.metrics.requestFinished()
            if jobs.isCurrent {
                deliver(response, token: token)
            } else {
                execute { [self] in deliver(response, token: token) }
            }
        }
        return true
    }

    /// Runs the route's admission for `head` as a task on the worker pool; the body is read, or
    /// the request refused, once it has answered (`admissionDecided`).
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
            loop: LoopContext(loop: self), logger: shared.logger)
        connection.admittedRequestID = context.requestID
        let token = connection.token
        let shared = self.shared
        guard shared.workers.admitsTask() else {
            connection.machine.refused()
            connection.startRequest(id: context.requestID, method: head.method.rawValue, route: route, now: System.now())
            return finish(Problem.serviceUnavailable().response(), on: connection)
        }
        Task(executorPreference: shared.workers) { [self] in
            let decision: Admitted
            do {
                decision = .admitted(try await RequestDeadline.with(context.deadline) { try await admission(head, context) })
            } catch {
                decision = .refused(shared.response(to: error, route: route, context))
            }
            execute { [self] in admissionDecided(token: token, route: route, context: context, decision) }
        }
        return .none
    }

    private func admissionDecided(
        token: UInt64, route: Router.Route, context: RequestContext, _ decision: Admitted
    ) {
        guard let connection = connection(for: token) else { return }
        switch decision {
        case .admitted(let admitted):
            connection.admitted = admitted
            perform(connection.machine.admitted(now: System.now()), on: connection)
        case .refused(let refusal):
            connection.admittedRequestID = nil
            connection.machine.refused()
            connection.startRequest(id: context.requestID, method: route.method.rawValue, route: route, now: System.now())
            perform(finish(refusal, on: connection), on: connection)
        }
    }

    /// An admission's outcome: what it returned, or the answer instead.
    private enum Admitted: Sendable {
        case admitted((any Sendable)?)
        case refused(Response)
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
