// libFuzzer target for the connection state machine fed random events: built by fuzz/run.sh with
// Sources/Protocols/HTTP/*.swift, ConnectionStateMachine.swift and ConnectionConfiguration.swift as one
// module. The input is a script: each byte picks an event (bytes received, a response, a write's
// progress or end, time passing, the peer closing, a drain, an admission decided, a body refused),
// and the bytes after it feed the event. The machine must never trap, and the harness checks that
// it asks for at most one answer at a time and that a closed machine stays closed.

@inline(__always)
private func check(_ condition: Bool, _ message: @autoclosure () -> String = "invariant") {
    if !condition { fatalError(message()) }
}

private let second: UInt64 = 1_000_000_000

/// Small limits and timeouts, so that every limit and deadline is reachable from a short script.
private let configuration: ConnectionConfiguration = {
    var limits = HTTPLimits()
    limits.maxRequestLineBytes = 64
    limits.maxFieldBytes = 48
    limits.maxHeaderBytes = 256
    limits.maxHeaderCount = 6
    limits.maxBodyBytes = 96
    limits.maxChunkExtensionBytes = 12
    return ConnectionConfiguration(
        limits: limits, headerTimeout: 10 * second, idleTimeout: 75 * second, bodyGrace: 5 * second,
        minBodyBytesPerSecond: 1000, writeTimeout: 60 * second, lingerTimeout: 2 * second,
        admissionThreshold: 16, bodyStallTimeout: 10 * second, requestTimeout: 20 * second,
        uploadTimeout: 40 * second)
}()

private let date = HTTPDate.format(secondsSinceEpoch: 0)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    var machine = ConnectionStateMachine(
        configuration: configuration, now: 0,
        bodyLimit: { $0.path.hasPrefix("/big") ? 200 : 96 },
        needsAdmission: { $0.path.hasPrefix("/a") })
    var now: UInt64 = 0
    /// What the machine has asked the harness for and not been told about yet.
    var answering = false
    var admitting = false
    var writing = false
    var closed = false
    var index = 0

    func take(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .dispatch, .reject:
            check(!answering && !admitting, "a second request handed out before the first was answered")
            answering = true
        case .admit:
            check(!answering && !admitting, "an admission while a request is out")
            admitting = true
        case .write:
            check(!writing, "a second write before the first completed")
            writing = true
            answering = false
        case .close:
            closed = true
        case .none, .sendContinue, .closeWrite:
            break
        }
        if closed { check(machine.isClosed, "the machine asked to close but is not closed") }
    }

    while index < input.count {
        let op = input[index] % 10
        let argument = index + 1 < input.count ? Int(input[index + 1]) : 0
        index += 1
        switch op {
        case 0:  // bytes arrive
            let count = min(argument % 48 + 1, input.count - index)
            let bytes = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: input[index..<(index + count)]))
            index += count
            take(machine.received(bytes, now: now))
        case 1:  // the handler answers
            guard answering else { continue }
            let status: HTTPStatus = argument % 3 == 0 ? .noContent : (argument % 3 == 1 ? .ok : .badRequest)
            take(machine.respond(Response(status: status, body: status == .noContent ? [] : Array("ok".utf8)), date: date, now: now))
        case 2:
            machine.writeProgressed(now: now)
        case 3:  // the write completed
            guard writing else { continue }
            writing = false
            take(machine.writeCompleted(now: now))
        case 4:  // time passes
            now += UInt64(argument) * second / 8
            take(machine.timeout(now: now))
        case 5:
            take(machine.peerClosed())
        case 6:
            take(machine.beginDraining())
        case 7:  // admitted
            guard admitting else { continue }
            admitting = false
            take(machine.admitted(now: now))
        case 8:  // refused, then answered
            guard admitting else { continue }
            admitting = false
            machine.refused()
            answering = true
            take(machine.respond(Response(status: .unauthorized), date: date, now: now))
        default:  // the server cannot hold the body
            if machine.expectedBodyBytes > 0, !answering, !admitting {
                machine.bodyRefused()
                answering = true
                take(machine.respond(Response(status: .serviceUnavailable), date: date, now: now))
            }
        }
        _ = machine.wantsRead
        _ = machine.deadline
        check(machine.expectedBodyBytes >= 0)
    }
    return 0
}
