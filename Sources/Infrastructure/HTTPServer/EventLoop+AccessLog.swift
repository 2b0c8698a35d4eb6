// The access log: one line per answered request, collected during a wake-up and written after it,
// and the request's figures for the metrics.
extension EventLoop {
    func logAccess(_ connection: Connection) {
        let elapsed = System.now() &- connection.requestStart
        shared.observe(
            route: connection.route?.index ?? -1, unmatchedMethod: connection.route == nil ? connection.method : nil,
            status: connection.status, nanoseconds: elapsed)
        guard shared.accessLog.isEnabled(.info) else { return }
        shared.accessLog.render(
            .info, "request",
            [
                "request.id": connection.requestID,
                "http.method": connection.method,
                "http.route": connection.route?.pattern ?? "-",
                "http.status": String(connection.status),
                "duration.ms": String(Double(elapsed / 1000) / 1000),
            ], into: &pendingLog)
    }
}
