import LoopInterface
import CLinux
import Glibc
import HTTP
import StructuredLogging
import Synchronization
import Threads

/// One thread, one epoll instance, one `SO_REUSEPORT` listening socket, and the connections it accepted.
///
/// Everything here runs on the loop's thread except `execute` and `requestDrain`, which post
/// work to it through an eventfd.
final class EventLoop: @unchecked Sendable {
    private static let listenerToken: UInt64 = .max
    private static let wakeToken: UInt64 = .max - 1
    /// Set in the tokens of watched sources (connection tokens keep their generation under 2^31).
    private static let sourceBit: UInt64 = 1 << 63
    /// The most of a file body sent per wake-up, so that one large file does not starve the
    /// loop's other connections (the counterpart of one read per wake-up).
    private static let fileChunk = 1 << 20

    let index: Int
    private let epfd: Int32
    private let wakeFD: Int32
    private var listenFD: Int32
    let shared: ServerShared
    private let connectionConfiguration: ConnectionConfiguration

    private var connections: [Connection?] = []
    private var openCount = 0
    private var nextGeneration: UInt32 = 1
    private var readBuffer: UnsafeMutableRawBufferPointer
    private(set) var date = HTTPDate.format(secondsSinceEpoch: System.wallClockSeconds())
    private var draining = false
    private var drainDeadline: UInt64 = 0
    /// While the process is out of descriptors: when this loop takes its listener back (0: accepting).
    private var acceptResumesAt: UInt64 = 0
    var requestCounter: UInt64 = 0
    let requestIDPrefix: [UInt8]
    /// Access-log lines of this wake-up, written together after it.
    var pendingLog: [UInt8] = []

    private let tasks = Mutex<[@Sendable () -> Void]>([])
    /// The executor of the tasks of requests whose routes run on the loop.
    let jobs = LoopJobs()
    /// Watched sources by slot (the low bits of their token), and each one's registered events.
    private var sources: [(source: LoopSource, events: UInt32)?] = []
    private var locals: [ObjectIdentifier: AnyObject] = [:]
    private var thread: OSThread?
    /// The loop thread's id once it runs, for tests that measure its CPU alone.
    let threadID = Atomic<Int32>(0)

    init(index: Int, listenFD: Int32, shared: ServerShared) throws(SystemError) {
        self.index = index
        self.listenFD = listenFD
        self.shared = shared
        self.connectionConfiguration = ConnectionConfiguration(shared.configuration)
        epfd = try System.epollCreate()
        wakeFD = try System.eventFD()
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        var random: UInt64 = 0
        _ = getrandom(&random, 8, 0)
        requestIDPrefix = Array((String(random & 0xFFFF_FFFF, radix: 16) + "-\(index)-").utf8)
        try System.epollControl(epfd, EPOLL_CTL_ADD, wakeFD, events: EPOLLIN.rawValue, data: EventLoop.wakeToken)
        jobs.post = { [unowned self] task in execute(task) }
        try System.epollControl(
            epfd, EPOLL_CTL_ADD, listenFD, events: EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue,
            data: EventLoop.listenerToken)
    }

    deinit {
        readBuffer.deallocate()
        System.close(epfd)
        System.close(wakeFD)
    }

    func start() {
        thread = OSThread(name: "http-loop-\(index)", stackSize: 1 << 20) { [self] in run() }
    }

    func join() {
        thread?.join()
    }

    /// Runs `task` on the loop's thread soon.
    func execute(_ task: @escaping @Sendable () -> Void) {
        tasks.withLock { $0.append(task) }
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    /// Stops accepting, closes idle connections, finishes in-flight ones, and ends the loop
    /// when none are left or at the deadline.
    func requestDrain(deadline: UInt64) {
        execute { [self] in
            guard !draining else { return }
            draining = true
            drainDeadline = deadline
            if listenFD >= 0 {
                if acceptResumesAt == 0 { try? System.epollControl(epfd, EPOLL_CTL_DEL, listenFD, events: 0, data: 0) }
                System.close(listenFD)
                listenFD = -1
            }
            for case let connection? in connections {
                perform(connection.machine.beginDraining(), on: connection)
                // An event stream has no end of its own: it ends here, and its client reconnects elsewhere.
                if !connection.closed, connection.file is ResponseEventStream { endEvents(on: connection) }
            }
        }
    }

    /// Ends an event stream's body now (its last chunk) and drops the stream.
    private func endEvents(on connection: Connection) {
        connection.awaitingChunk = false
        connection.file = nil
        if connection.chunked { ResponseSerializer.appendChunk([], into: &connection.output) }
        perform(flush(connection), on: connection)
    }

    // MARK: - The loop

    private func run() {
        threadID.store(gettid(), ordering: .releasing)
        System.blockBrokenPipeSignal()
        let maxEvents = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: maxEvents)
        defer { events.deallocate() }
        var nextTimerCheck = System.now() + 250_000_000
        jobs.attach()
        while true {
            let count = epoll_wait(epfd, events, Int32(maxEvents), !jobs.isEmpty ? 0 : acceptResumesAt == 0 ? 250 : 50)
            if count < 0, errno != EINTR {
                shared.logger.critical("epoll_wait failed", ["error": String(cString: strerror(errno))])
                break
            }
            for i in 0..<Int(max(0, count)) {
                let event = events[i]
                switch event.data.u64 {
                case EventLoop.listenerToken: acceptConnections()
                case EventLoop.wakeToken: runTasks()
                case let token where token & EventLoop.sourceBit != 0: handleSource(event: event.events, token: token)
                default: handle(event: event.events, token: event.data.u64)
                }
            }
            jobs.run()
            for slot in sources.indices {
                guard let source = sources[slot]?.source else { continue }
                source.wakeUpEnded()
                updateInterest(source, slot: slot)
            }
            if !pendingLog.isEmpty {
                shared.accessLog.write(pendingLog)
                pendingLog.removeAll(keepingCapacity: true)
            }
            let now = System.now()
            if acceptResumesAt != 0, now >= acceptResumesAt { resumeAccepting() }
            if now >= nextTimerCheck {
                nextTimerCheck = now + 250_000_000
                checkTimers(now: now)
            }
            if draining {
                if openCount == 0 { break }
                if now >= drainDeadline {
                    for case let connection? in connections { closeConnection(connection) }
                    break
                }
            }
        }
        runTasks()
        let ending = sources.compactMap { $0?.source }
        let endingLocals = locals.values.compactMap { $0 as? LoopSource }.filter { local in !ending.contains { $0 === local } }
        sources = []
        locals = [:]
        for source in ending {
            try? System.epollControl(epfd, EPOLL_CTL_DEL, source.fileDescriptor, events: 0, data: 0)
            source.loopEnded()
        }
        // Loop-local sources that were not being watched (still opening, say) end too.
        for source in endingLocals { source.loopEnded() }
        jobs.end()
    }

    // MARK: - Sources

    func watch(_ source: LoopSource) throws(SystemError) {
        let slot = sources.firstIndex(where: { $0 == nil }) ?? sources.count
        let events = EPOLLIN.rawValue | (source.wantsWrite ? EPOLLOUT.rawValue : 0)
        try System.epollControl(epfd, EPOLL_CTL_ADD, source.fileDescriptor, events: events, data: EventLoop.sourceBit | UInt64(slot))
        if slot == sources.count { sources.append(nil) }
        sources[slot] = (source, events)
    }

    func unwatch(_ source: LoopSource) {
        guard let slot = sources.firstIndex(where: { $0?.source === source }) else { return }
        sources[slot] = nil
        try? System.epollControl(epfd, EPOLL_CTL_DEL, source.fileDescriptor, events: 0, data: 0)
    }

    func local<Value: AnyObject>(_ make: () -> Value) -> Value {
        let key = ObjectIdentifier(Value.self)
        if let value = locals[key] as? Value { return value }
        let value = make()
        locals[key] = value
        return value
    }

    private func handleSource(event: UInt32, token: UInt64) {
        let slot = Int(token & 0xFFFF_FFFF)
        guard slot < sources.count, let source = sources[slot]?.source else { return }
        if event & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { source.readable() }
        if event & EPOLLOUT.rawValue != 0, sources[slot]?.source === source { source.writable() }
        updateInterest(source, slot: slot)
    }

    private func updateInterest(_ source: LoopSource, slot: Int) {
        guard let entry = sources[slot], entry.source === source else { return }
        let events = EPOLLIN.rawValue | (source.wantsWrite ? EPOLLOUT.rawValue : 0)
        guard events != entry.events else { return }
        sources[slot] = (source, events)
        try? System.epollControl(epfd, EPOLL_CTL_MOD, source.fileDescriptor, events: events, data: EventLoop.sourceBit | UInt64(slot))
    }

    private func runTasks() {
        var value: UInt64 = 0
        _ = Glibc.read(wakeFD, &value, 8)
        let pending = tasks.withLock { tasks -> [@Sendable () -> Void] in
            let taken = tasks
            tasks.removeAll(keepingCapacity: true)
            return taken
        }
        for task in pending { task() }
    }

    private func acceptConnections() {
        while listenFD >= 0 {
            let fd: Int32
            do {
                guard let accepted = try System.accept(listenFD) else { return }
                fd = accepted
            } catch {
                if System.isExhaustion(error) {
                    // Level-triggered, the listener would wake this loop again at once, and fail
                    // again: leave it alone for a while; the backlog holds the clients meanwhile.
                    shared.noteAcceptExhaustion(error, now: System.now())
                    pauseAccepting()
                } else if error.errno != ECONNABORTED {
                    shared.logger.warning("accept failed", ["error": error.description])
                }
                return
            }
            guard shared.reserveConnection() else {
                // Over the cap: a fast 503 and close, without reading the request.
                _ = try? System.write(fd, shared.overloadedResponse.withUnsafeBytes { $0 })
                System.close(fd)
                continue
            }
            let address = System.peerAddress(fd)
            guard shared.reserve(address: address) else {
                // This client has its share of connections already.
                shared.releaseConnection()
                _ = try? System.write(fd, shared.overloadedResponse.withUnsafeBytes { $0 })
                System.close(fd)
                continue
            }
            System.setNoDelay(fd)
            let generation = nextGeneration
            nextGeneration &+= 1
            if nextGeneration >= 1 << 31 { nextGeneration = 1 }
            let routes = RouteLookup(shared.router)
            let connection = Connection(
                fd: fd, generation: generation, remoteAddress: address, routes: routes,
                machine: ConnectionStateMachine(
                    configuration: connectionConfiguration, now: System.now(),
                    bodyLimit: shared.bodyLimit(routes), needsAdmission: shared.needsAdmission(routes)))
            let slot = Int(fd)
            if slot >= connections.count { connections.append(contentsOf: repeatElement(nil, count: slot - connections.count + 1)) }
            connections[slot] = connection
            openCount += 1
            do {
                try System.epollControl(epfd, EPOLL_CTL_ADD, fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue, data: connection.token)
                connection.registeredEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
            } catch {
                closeConnection(connection)
            }
        }
    }

    private func pauseAccepting() {
        guard listenFD >= 0, acceptResumesAt == 0 else { return }
        try? System.epollControl(epfd, EPOLL_CTL_DEL, listenFD, events: 0, data: 0)
        acceptResumesAt = System.now() + shared.configuration.acceptPauseAfterExhaustion.nanoseconds
    }

    private func resumeAccepting() {
        acceptResumesAt = 0
        guard listenFD >= 0, !draining else { return }
        do {
            try System.epollControl(
                epfd, EPOLL_CTL_ADD, listenFD, events: EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue,
                data: EventLoop.listenerToken)
        } catch {
            shared.logger.error("cannot watch the listening socket again", ["error": error.description])
        }
    }

    func connection(for token: UInt64) -> Connection? {
        let slot = Int(token & 0xFFFF_FFFF)
        guard slot < connections.count, let connection = connections[slot], connection.token == token else { return nil }
        return connection
    }

    private func handle(event: UInt32, token: UInt64) {
        guard let connection = connection(for: token) else { return }
        if event & EPOLLOUT.rawValue != 0 {
            perform(flush(connection), on: connection)
            if connection.closed { return }
        }
        if event & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue | EPOLLRDHUP.rawValue) != 0 {
            readAvailable(connection)
        }
    }

    private func readAvailable(_ connection: Connection) {
        // Level-triggered: one read per wake-up keeps the loop fair between connections.
        let result: Int?
        do {
            result = try System.read(connection.fd, readBuffer)
        } catch {
            closeConnection(connection)
            return
        }
        guard let count = result else { return }
        if count == 0 {
            // An event stream has no end to wait for: a client that hangs up is gone.
            if connection.file is ResponseEventStream {
                closeConnection(connection)
                return
            }
            // A client that closes while its request is being answered will not read the answer.
            connection.cancellation?.cancel()
            perform(connection.machine.peerClosed(), on: connection)
            return
        }
        let action = connection.machine.received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]), now: System.now())
        perform(action, on: connection)
    }

    // MARK: - Actions

    func perform(_ action: ConnectionStateMachine.Action, on connection: Connection) {
        var next = action
        while !connection.closed {
            switch next {
            case .none:
                if connection.machine.expectedBodyBytes > connection.reservedBodyBytes, !reserveBody(connection) {
                    connection.machine.bodyRefused()
                    connection.startRequest(id: nextRequestID(from: nil), method: "-", route: nil, now: System.now())
                    next = finish(
                        Problem.serviceUnavailable(detail: "The server holds too many request bodies; try again shortly.")
                            .response(), on: connection)
                    continue
                }
                updateInterest(connection)
                return
            case .sendContinue:
                connection.output.append(contentsOf: ResponseSerializer.continueResponse)
                next = flush(connection)
            case .dispatch(let request):
                next = dispatch(request, on: connection)
            case .admit(let head):
                next = admit(head, on: connection)
            case .reject(let error):
                connection.startRequest(id: nextRequestID(from: nil), method: "-", route: nil, now: System.now())
                next = finish(Problem(error).response(), on: connection)
            case .write(let bytes, let file, _):
                if connection.output.isEmpty { connection.output = bytes } else { connection.output.append(contentsOf: bytes) }
                // Nothing is queued after a response until it is written, so the file follows these bytes.
                if let file {
                    if let events = file as? ResponseEventStream, let bytes = events.sendBufferBytes {
                        System.setSendBuffer(connection.fd, bytes: bytes)
                    }
                    connection.file = file
                    connection.fileOffset = (file as? ResponseFile)?.offset ?? 0
                    connection.fileRemaining = (file as? any SizedResponseBody)?.length ?? 0
                    connection.chunked = connection.machine.bodyIsChunked
                }
                connection.awaitingFinalFlush = true
                next = flush(connection)
            case .closeWrite:
                System.shutdownWrite(connection.fd)
                next = .none
            case .close:
                closeConnection(connection)
                return
            }
        }
    }

    /// Writes what is queued, then the file body if there is one; tells the machine when a final response is out.
    private func flush(_ connection: Connection) -> ConnectionStateMachine.Action {
        let fileFollows = connection.file != nil
        let more = connection.bytesFollowAtOnce
        while connection.outputOffset < connection.output.count {
            let written: Int?
            do {
                written = try connection.output.withUnsafeBytes { raw throws(SystemError) in
                    try System.write(connection.fd, UnsafeRawBufferPointer(rebasing: raw[connection.outputOffset...]), more: more)
                }
            } catch {
                return .close
            }
            guard let written else {
                connection.machine.writeProgressed(now: System.now())
                updateInterest(connection)
                return .none
            }
            connection.outputOffset += written
        }
        if let stream = connection.file as? ResponseStream, connection.output.count > 64 * 1024 {
            // A pulled chunk, written: its stream may fill it again.
            let written = connection.output
            connection.output = []
            stream.recycle(written)
        } else {
            connection.output.removeAll(keepingCapacity: connection.output.capacity <= 64 * 1024)
        }
        connection.outputOffset = 0
        if fileFollows, let action = sendFile(connection) { return action }
        guard connection.awaitingFinalFlush else { return .none }
        connection.awaitingFinalFlush = false
        logAccess(connection)
        return connection.machine.writeCompleted(now: System.now())
    }

    /// Sends up to `fileChunk` bytes of the file body; nil once it is all sent (and closed),
    /// otherwise what to do now (wait for `EPOLLOUT`, or close).
    private func sendFile(_ connection: Connection) -> ConnectionStateMachine.Action? {
        if let stream = connection.file as? ResponseStream { return pull(stream, for: connection) }
        if let events = connection.file as? ResponseEventStream { return pull(events, for: connection) }
        guard let file = connection.file as? ResponseFile else { return nil }
        var budget = EventLoop.fileChunk
        while connection.fileRemaining > 0 {
            guard budget > 0 else {
                // Level-triggered EPOLLOUT brings us back after the other connections had their turn.
                connection.machine.writeProgressed(now: System.now())
                updateInterest(connection)
                return ConnectionStateMachine.Action.none
            }
            let sent: Int?
            do {
                sent = try System.sendfile(
                    connection.fd, from: file.descriptor, offset: &connection.fileOffset,
                    count: min(connection.fileRemaining, budget))
            } catch {
                if error.errno != EPIPE, error.errno != ECONNRESET {
                    shared.logger.warning("file body failed", ["request.id": connection.requestID, "error": error.description])
                }
                return .close
            }
            guard let sent else {
                if budget < EventLoop.fileChunk { connection.machine.writeProgressed(now: System.now()) }
                updateInterest(connection)
                return ConnectionStateMachine.Action.none
            }
            if sent == 0 {
                // The file shrank after Content-Length was sent: the framing cannot be repaired.
                shared.logger.warning(
                    "file body ended early",
                    [
                        "request.id": connection.requestID,
                        "file.missing_bytes": String(connection.fileRemaining),
                    ])
                return .close
            }
            connection.fileRemaining -= sent
            budget -= sent
        }
        connection.file = nil
        return nil
    }

    /// The size of the chunks a stream body is asked for: what one connection holds at most.
    static let streamChunk = 256 * 1024

    /// Asks a stream body for its next chunk, once what was written before has gone; nil once the
    /// whole body is out.
    private func pull(_ stream: any ResponseStream, for connection: Connection) -> ConnectionStateMachine.Action? {
        guard connection.fileRemaining > 0 else {
            connection.file = nil
            return nil
        }
        if !connection.awaitingChunk {
            connection.awaitingChunk = true
            let token = connection.token
            let handOver = ChunkHandOver()
            stream.next(maxBytes: min(EventLoop.streamChunk, connection.fileRemaining)) { [self] result in
                guard !handOver.offer(result) else { return }
                execute { [self] in received(result, token: token) }
            }
            // Made while `next` ran (what a source had at hand): written on this connection's
            // next turn, once the others had theirs (level-triggered EPOLLOUT), with no wake-up.
            if let chunk = handOver.close(), !take(chunk, on: connection) { return ConnectionStateMachine.Action.none }
        }
        // The write deadline holds while the chunk is being made: a stalled source ends the connection.
        updateInterest(connection)
        return ConnectionStateMachine.Action.none
    }

    /// A stream's chunk (or its failure), on the loop.
    private func received(_ chunk: Result<[UInt8], any Error>, token: UInt64) {
        guard let connection = connection(for: token), connection.awaitingChunk, take(chunk, on: connection) else { return }
        perform(flush(connection), on: connection)
    }

    /// Queues a stream's chunk to be written; false when the connection was closed instead.
    private func take(_ chunk: Result<[UInt8], any Error>, on connection: Connection) -> Bool {
        connection.awaitingChunk = false
        switch chunk {
        case .success(let bytes) where !bytes.isEmpty && bytes.count <= connection.fileRemaining:
            // Pulled once what was written before has gone: the chunk itself is written, uncopied.
            if connection.output.isEmpty { connection.output = bytes } else { connection.output.append(contentsOf: bytes) }
            connection.fileRemaining -= bytes.count
            connection.machine.writeProgressed(now: System.now())
            return true
        case .success:
            shared.logger.warning("stream body gave a wrong chunk", ["request.id": connection.requestID])
        case .failure(let error):
            // The head announced a length that can no longer be met: only closing tells the client.
            shared.logger.warning("stream body failed", ["request.id": connection.requestID, "error": String(reflecting: error)])
        }
        closeConnection(connection)
        return false
    }

    /// Asks an event stream for what comes next, once what was written before has gone.
    private func pull(_ events: any ResponseEventStream, for connection: Connection) -> ConnectionStateMachine.Action? {
        if !connection.awaitingChunk {
            connection.awaitingChunk = true
            let token = connection.token
            events.next { [self] result in
                execute { [self] in receivedEvents(result, token: token) }
            }
        }
        // The write deadline holds while waiting: the source writes often enough to keep it.
        updateInterest(connection)
        return ConnectionStateMachine.Action.none
    }

    /// An event stream's next bytes, its end (`[]`) or its failure, on the loop.
    private func receivedEvents(_ chunk: Result<[UInt8], any Error>, token: UInt64) {
        guard let connection = connection(for: token), connection.awaitingChunk else { return }
        connection.awaitingChunk = false
        switch chunk {
        case .success(let bytes):
            if bytes.isEmpty { return endEvents(on: connection) }
            if connection.chunked {
                ResponseSerializer.appendChunk(bytes, into: &connection.output)
            } else {
                connection.output.append(contentsOf: bytes)
            }
            connection.machine.writeProgressed(now: System.now())
            perform(flush(connection), on: connection)
        case .failure(let error):
            // The body cannot end well: only closing tells the client.
            shared.logger.warning("event stream failed", ["request.id": connection.requestID, "error": String(reflecting: error)])
            closeConnection(connection)
        }
    }

    private func updateInterest(_ connection: Connection) {
        guard !connection.closed else { return }
        // EPOLLRDHUP is level-triggered: kept on after the peer's FIN (which stops reading) it would spin the loop.
        var events: UInt32 = 0
        if connection.machine.wantsRead { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if connection.hasPendingOutput { events |= EPOLLOUT.rawValue }
        guard events != connection.registeredEvents else { return }
        connection.registeredEvents = events
        do {
            try System.epollControl(epfd, EPOLL_CTL_MOD, connection.fd, events: events, data: connection.token)
        } catch {
            closeConnection(connection)
        }
    }

    private func closeConnection(_ connection: Connection) {
        guard !connection.closed else { return }
        connection.closed = true
        connection.cancellation?.cancel()
        shared.releaseBodyBytes(connection.reservedBodyBytes)
        connection.reservedBodyBytes = 0
        shared.release(address: connection.remoteAddress)
        connection.file = nil
        System.close(connection.fd)
        connections[Int(connection.fd)] = nil
        openCount -= 1
        shared.releaseConnection()
    }

    private func checkTimers(now: UInt64) {
        let seconds = System.wallClockSeconds()
        if seconds != date.seconds { date = HTTPDate.format(secondsSinceEpoch: seconds) }
        for case let connection? in connections {
            guard let deadline = connection.machine.deadline, now >= deadline else { continue }
            perform(connection.machine.timeout(now: now), on: connection)
        }
    }
}

/// A stream's chunk made while its `next` is still running (on the loop, from what the source had
/// at hand, or by a thread that was quick), which the loop then takes where it called `next`
/// instead of being woken for it.
private final class ChunkHandOver: Sendable {
    private let state = Mutex<(open: Bool, chunk: Result<[UInt8], any Error>?)>((true, nil))

    /// Keeps `chunk` for the caller of `next` if it has not returned yet; false when it has.
    func offer(_ chunk: Result<[UInt8], any Error>) -> Bool {
        state.withLock { state in
            guard state.open else { return false }
            state.chunk = chunk
            return true
        }
    }

    /// `next` has returned: the chunk offered meanwhile, if any; later ones are not kept.
    func close() -> Result<[UInt8], any Error>? {
        state.withLock { state in
            state.open = false
            return state.chunk
        }
    }
}
