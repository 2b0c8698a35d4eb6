import CLibPQ
import Glibc
import Synchronization
import Threads

/// One blocking libpq connection, used by one thread at a time (lend it with a pool).
///
/// Every statement is prepared once per connection, keyed by its SQL text, and then executed
/// with `PQsendQueryPrepared`: one round trip per query.
public final class PostgresConnection {
    let handle: OpaquePointer
    let statementCacheCapacity: Int
    /// SQL text → the statements prepared for it (one per combination of parameter types).
    var statements: [String: [PreparedStatement]] = [:]
    var cachedStatementCount = 0
    /// The prepared forms of `PostgresStatement`s, indexed by their id.
    var fixedStatements: [PreparedStatement?] = []
    var isClosed = false
    /// Set when an error showed the connection to be unusable.
    var isBroken = false
    /// How long a statement may wait for the server's answer before the connection is
    /// abandoned (`timedOut`); nil waits as long as it takes. From the configuration.
    public var responseTimeout: Duration?
    /// Behind a pooler in transaction mode: every statement runs as the unnamed statement, since
    /// the next transaction may run on a server connection that never saw a named one.
    let unnamedStatements: Bool

    /// Connects synchronously, within the configuration's `connectTimeout` and, on a thread
    /// working for a request, by its deadline (`RequestDeadline`); throws `connectionFailed` with
    /// libpq's message in `debugDescription`, or `timedOut` when the request's deadline came first.
    public init(configuration: PostgresConfiguration) throws {
        try configuration.checkPooler()
        if configuration.pooler != .none { _ = PostgresConfiguration.pooledStartupEnvironment }
        let parameters = configuration.connectParameters
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection: OpaquePointer? = (keywords + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { keys in
            (values + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { vals in
                PQconnectStartParams(keys.baseAddress, vals.baseAddress, 1)
            }
        }
        guard let connection else {
            throw PostgresError(code: .connectionFailed, context: "libpq could not allocate a connection")
        }
        try Self.complete(connection, by: RequestDeadline.bounding(monotonicNanoseconds() &+ configuration.connectTimeout.nanoseconds))
        // Without this libpq prints notices (and a server's FATAL on an idle connection) to stderr.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        statementCacheCapacity = configuration.statementCacheCapacity
        responseTimeout = configuration.responseTimeout
        unnamedStatements = configuration.pooler == .transaction
        if let settings = configuration.settingsAfterConnecting { try unsafeExecuteScript(settings) }
    }

    /// Drives libpq's non-blocking connect (`PQconnectPoll`) until it is done or `deadline`
    /// (monotonic nanoseconds) passes; finishes the connection when it fails. libpq's own
    /// `connect_timeout` counts whole seconds, at least 2, which could overrun a request's deadline;
    /// this one is exact.
    private static func complete(_ connection: OpaquePointer, by deadline: UInt64) throws {
        func failure() -> PostgresError {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines
            PQfinish(connection)
            return PostgresError(code: .connectionFailed, context: message)
        }
        guard PQstatus(connection) != CONNECTION_BAD else { throw failure() }
        var status = PGRES_POLLING_WRITING
        while status != PGRES_POLLING_OK {
            guard status != PGRES_POLLING_FAILED else { throw failure() }
            let now = monotonicNanoseconds()
            guard now < deadline else {
                PQfinish(connection)
                if let request = RequestDeadline.current, request.hasPassed {
                    throw PostgresError(code: .timedOut, context: "not connected before the request's deadline")
                }
                throw PostgresError(code: .connectionFailed, context: "timeout expired")
            }
            let events = status == PGRES_POLLING_READING ? POLLIN : POLLOUT
            // The socket may change while connecting (another address of the host): asked each time.
            var descriptor = pollfd(fd: PQsocket(connection), events: Int16(events), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000)))
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            status = PQconnectPoll(connection)
        }
    }

    /// Connects to a connection string with default settings.
    public convenience init(connectionString: String) throws {
        try self.init(configuration: PostgresConfiguration(connectionString: connectionString))
    }

    deinit {
        if !isClosed { PQfinish(handle) }
    }

    /// Closes the connection; later calls throw `connectionFailed`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        PQfinish(handle)
    }

    /// False once the connection is closed or libpq has seen it break.
    public var isUsable: Bool { !isClosed && !isBroken && PQstatus(handle) == CONNECTION_OK }

    /// True between BEGIN and COMMIT/ROLLBACK (also when the transaction has failed).
    public var isInTransaction: Bool {
        guard !isClosed else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server's version number, e.g. 150004.
    public var serverVersion: Int { isClosed ? 0 : Int(PQserverVersion(handle)) }

    /// Runs a statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        PostgresRows(result: try run(query))
    }

    /// Runs a statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> Int {
        PostgresRows(result: try run(query)).affectedRows
    }

    /// Runs a fixed statement with these parameters and returns its rows.
    @discardableResult
    public func query(_ statement: PostgresStatement, _ binds: PostgresBindings) throws -> PostgresRows {
        PostgresRows(result: try run(statement, binds))
    }

    // MARK: - Execution

    /// Runs a fixed statement: prepared on its first run on this connection, then found by id.
    func run(_ statement: PostgresStatement, _ binds: PostgresBindings) throws -> PostgresResult {
        if let problem = binds.encodingProblem {
            throw PostgresError(code: .encodingFailed, context: problem)
        }
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        if unnamedStatements { return try runUnnamed(PostgresQuery(unsafeSQL: statement.sql, binds: binds)) }
        let name: String
        if let prepared = fixedStatement(statement) {
            // Other parameter types than at its first run: the general path prepares another.
            guard binds.matches(prepared.types) else { return try run(PostgresQuery(unsafeSQL: statement.sql, binds: binds)) }
            name = prepared.name
        } else {
            name = statement.preparedName
            try prepare(name: name, query: PostgresQuery(unsafeSQL: statement.sql, binds: binds))
            recordFixedStatement(statement, types: binds.entries.map(\.type))
        }
        return try withParameters(binds) { values, lengths, formats in
            try check(awaitResult(PQsendQueryPrepared(handle, name, Int32(binds.entries.count), values, lengths, formats, 0)))
        }
    }

    /// The prepared form of `statement` on this connection, if it has one.
    func fixedStatement(_ statement: PostgresStatement) -> PreparedStatement? {
        statement.id < fixedStatements.count ? fixedStatements[statement.id] : nil
    }

    /// Notes that `statement` is prepared here, as `preparedName`, for parameters of `types`.
    func recordFixedStatement(_ statement: PostgresStatement, types: [PostgresDataType]) {
        let id = statement.id
        if id >= fixedStatements.count {
            fixedStatements.append(contentsOf: repeatElement(nil, count: id - fixedStatements.count + 1))
        }
        fixedStatements[id] = PreparedStatement(name: statement.preparedName, types: types)
    }

    /// Forgets `statement`'s prepared form (its preparation failed): its next run prepares it again.
    func forgetFixedStatement(_ statement: PostgresStatement) {
        if statement.id < fixedStatements.count { fixedStatements[statement.id] = nil }
    }

    /// `binaryResults` asks for every column in PostgreSQL's binary format (only `fetchBytes` does).
    func run(_ query: PostgresQuery, binaryResults: Bool = false) throws -> PostgresResult {
        if let problem = query.binds.encodingProblem {
            throw PostgresError(code: .encodingFailed, context: problem)
        }
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        let binds = query.binds
        let count = binds.entries.count
        let resultFormat: Int32 = binaryResults ? 1 : 0
        if unnamedStatements { return try runUnnamed(query, resultFormat: resultFormat) }
        if let name = cachedStatement(query) {
            return try withParameters(binds) { values, lengths, formats in
                try check(awaitResult(PQsendQueryPrepared(handle, name, Int32(count), values, lengths, formats, resultFormat)))
            }
        }
        if cachedStatementCount < statementCacheCapacity {
            let name = "exo_\(cachedStatementCount)"
            try prepare(name: name, query: query)
            statements[query.sql, default: []].append(
                PreparedStatement(name: name, types: binds.entries.map(\.type)))
            cachedStatementCount += 1
            return try withParameters(binds) { values, lengths, formats in
                try check(awaitResult(PQsendQueryPrepared(handle, name, Int32(count), values, lengths, formats, resultFormat)))
            }
        }
        // Cache full (likely SQL built with varying `unsafeRaw` parts): run as the unnamed statement.
        return try runUnnamed(query, resultFormat: resultFormat)
    }

    /// Parse, bind and execute of the unnamed statement, in one round trip.
    func runUnnamed(_ query: PostgresQuery, resultFormat: Int32 = 0) throws -> PostgresResult {
        let binds = query.binds
        let types = binds.entries.map { Oid($0.type.rawValue) }
        return try withParameters(binds) { values, lengths, formats in
            try check(awaitResult(PQsendQueryParams(handle, query.sql, Int32(types.count), types, values, lengths, formats, resultFormat)))
        }
    }

    /// The statement prepared for this SQL text with these parameter types: the server fixes the
    /// types at PREPARE, so `SELECT $1` with an Int and with a Date are two statements.
    @inline(__always)
    func cachedStatement(_ query: PostgresQuery) -> String? {
        guard let candidates = statements[query.sql] else { return nil }
        let entries = query.binds.entries
        search: for candidate in candidates where candidate.types.count == entries.count {
            for index in entries.indices where entries[index].type != candidate.types[index] { continue search }
            return candidate.name
        }
        return nil
    }

    func prepare(name: String, query: PostgresQuery) throws {
        let types = query.binds.entries.map { Oid($0.type.rawValue) }
        let result = try check(awaitResult(PQsendPrepare(handle, name, query.sql, Int32(types.count), types)))
        _ = result
    }

    /// Lends libpq's four parameter arrays, pointing into the bindings' buffer.
    @inline(__always)
    func withParameters<T>(
        _ binds: PostgresBindings,
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T
    ) rethrows -> T {
        let count = binds.entries.count
        if count == 0 { return try body(nil, nil, nil) }
        return try binds.bytes.withUnsafeBufferPointer { bytes in
            try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { values in
                try withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * count) { numbers in
                    let raw = UnsafeRawPointer(bytes.baseAddress)
                    for (index, entry) in binds.entries.enumerated() {
                        if entry.length < 0 {
                            values[index] = nil
                        } else {
                            // A zero-length binary value still needs a non-NULL pointer.
                            values[index] = (raw ?? UnsafeRawPointer(bitPattern: 1)!)
                                .advanced(by: Int(entry.offset)).assumingMemoryBound(to: CChar.self)
                        }
                        numbers[index] = max(entry.length, 0)
                        numbers[count + index] = entry.isBinary ? 1 : 0
                    }
                    return try body(
                        UnsafePointer(values.baseAddress), UnsafePointer(numbers.baseAddress),
                        UnsafePointer(numbers.baseAddress! + count))
                }
            }
        }
    }

    /// What `PQexec` does after sending, with `responseTimeout`: sends (`send`, a `PQsend…`
    /// call), waits for the results, and returns the first failed one or else the last, clearing
    /// the others; nil when the send failed. Past the timeout, or the calling thread's request
    /// deadline (`RequestDeadline`) when that comes first, the connection is abandoned
    /// (`abandon`) and `timedOut` is thrown: a server that stopped answering (a frozen process, a
    /// partition) must not hold the request, or the thread, for as long as it lasts. Nothing is
    /// sent once the request's deadline has passed (the connection stays as it was).
    func awaitResult(_ send: @autoclosure () -> Int32) throws -> OpaquePointer? {
        if let request = RequestDeadline.current, request.hasPassed {
            throw PostgresError(code: .timedOut, context: "the request's deadline passed before the statement was sent")
        }
        let deadline = answerDeadline()
        guard send() == 1 else { return nil }
        var kept: OpaquePointer?
        var keptFailure = false
        while true {
            guard waitUntilReadable(deadline: deadline) else {
                if let kept { PQclear(kept) }
                abandon()
                throw noAnswer()
            }
            guard let result = PQgetResult(handle) else { break }
            let status = PQresultStatus(result)
            let failed =
                status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK && status != PGRES_EMPTY_QUERY
                && status != PGRES_COPY_IN && status != PGRES_COPY_OUT
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT {
                // COPY hands the connection to the caller: no NULL follows until the copy ends.
                if let kept { PQclear(kept) }
                return result
            }
            if keptFailure {
                PQclear(result)
                continue
            }
            if let kept { PQclear(kept) }
            kept = result
            keptFailure = failed
        }
        return kept
    }

    /// The next result of what was sent, waiting at most the response timeout (or what is left
    /// of the request's deadline) for it; nil once they are all read. Past it the connection is
    /// abandoned and `timedOut` thrown.
    func awaitNextResult() throws -> OpaquePointer? {
        guard waitUntilReadable(deadline: answerDeadline()) else {
            abandon()
            throw noAnswer()
        }
        return PQgetResult(handle)
    }

    /// Until when an answer is waited for, from now (monotonic nanoseconds): the response timeout
    /// or the calling thread's request deadline, whichever comes first; nil waits as long as it takes.
    func answerDeadline() -> UInt64? {
        let own = responseTimeout.map { monotonicNanoseconds() &+ $0.nanoseconds }
        guard let request = RequestDeadline.current else { return own }
        return min(own ?? .max, request.uptimeNanoseconds)
    }

    /// The error of a wait for the server that ran out (`answerDeadline`).
    func noAnswer(_ what: String = "no answer from the server") -> PostgresError {
        if let request = RequestDeadline.current, request.hasPassed {
            return PostgresError(code: .timedOut, context: "\(what) before the request's deadline")
        }
        return PostgresError(code: .timedOut, context: "\(what) within \(responseTimeout.map { "\($0)" } ?? "the time allowed")")
    }

    /// Whether libpq has a whole result to give (or an error to report) before `deadline`
    /// (monotonic nanoseconds; nil waits as long as it takes).
    private func waitUntilReadable(deadline: UInt64?) -> Bool {
        while PQisBusy(handle) == 1 {
            var timeout: Int32 = -1
            if let deadline {
                let now = monotonicNanoseconds()
                guard now < deadline else { return false }
                timeout = Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0, errno == EINTR { continue }
            // The socket's error or hang-up, or libpq's own failure, is the result's to report.
            if ready < 0 || PQconsumeInput(handle) == 0 { return true }
        }
        return true
    }

    /// Gives up on a connection whose server stopped answering: asks the server, from another
    /// thread, to cancel what runs (a cancel request waits for an answer too, and may wait as long
    /// as the server is frozen), and closes this end, so that the pool opens a new connection.
    func abandon() {
        sendCancel()
        close()
    }

    /// Asks the server, from another thread, to cancel what this connection runs; marks it broken.
    func sendCancel() {
        isBroken = true
        guard !isClosed else { return }
        if let cancel = PQgetCancel(handle) {
            if PostgresConnection.cancelsInFlight.add(1, ordering: .relaxed).newValue <= 8 {
                let box = CancelBox(cancel)
                OSThread(name: "pg-cancel", stackSize: 128 * 1024) {
                    var buffer = [CChar](repeating: 0, count: 256)
                    _ = PQcancel(box.cancel, &buffer, Int32(buffer.count))
                    PQfreeCancel(box.cancel)
                    PostgresConnection.cancelsInFlight.subtract(1, ordering: .relaxed)
                }.detach()
            } else {
                PostgresConnection.cancelsInFlight.subtract(1, ordering: .relaxed)
                PQfreeCancel(cancel)
            }
        }
    }

    /// Cancel requests still waiting for a frozen server; past 8 no more are sent.
    static let cancelsInFlight = Atomic<Int>(0)

    /// Turns a libpq result into a `PostgresResult` or throws the matching `PostgresError`.
    @inline(__always)
    func check(_ result: OpaquePointer?) throws -> PostgresResult {
        guard let result else {
            isBroken = true
            throw PostgresError(code: .connectionFailed, context: errorMessage)
        }
        let status = PQresultStatus(result)
        if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
            return PostgresResult(result)
        }
        let error = makeError(result)
        PQclear(result)
        throw error
    }

    func makeError(_ result: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C").map(SQLState.init(rawValue:))
        // No SQLSTATE means libpq itself failed (EOF, EPIPE, protocol): the connection is gone
        // even if PQstatus has not caught up yet. A write refused as read-only means the server
        // behind this connection is (or became) a standby: during a failover, a pooler or proxy
        // may route to the new leader before its promotion ends. Such a connection is dropped as
        // well, so that the next one finds the primary.
        let broken =
            PQstatus(handle) != CONNECTION_OK || sqlState == nil || sqlState?.isConnectionError == true
            || sqlState == .readOnlySQLTransaction
        if broken { isBroken = true }
        var error = PostgresError(code: broken ? .connectionFailed : .queryFailed, sqlState: sqlState)
        if let primary = field("M") {
            error.serverMessage = primary
        } else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines
            error.serverMessage = message.isEmpty ? errorMessage : message
        }
        error.serverDetail = field("D")
        error.serverHint = field("H")
        error.constraintName = field("n")
        error.tableName = field("t")
        error.columnName = field("c")
        return error
    }

    var errorMessage: String {
        String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines
    }

    /// Runs a fixed, parameterless command with the simple protocol (BEGIN, COMMIT, …).
    func simpleCommand(_ sql: StaticString) throws {
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        // A StaticString literal is stored NUL-terminated.
        let text = UnsafeRawPointer(sql.utf8Start).assumingMemoryBound(to: CChar.self)
        _ = try check(awaitResult(PQsendQuery(handle, text)))
    }

    /// THE ONE PLACE raw, unparameterised SQL is executed: a migration file's body, which may hold
    /// several statements. Only `Migrator` calls it, with files from the deployment's own directory.
    func unsafeExecuteScript(_ sql: String) throws {
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        _ = try check(awaitResult(PQsendQuery(handle, sql)))
    }

    // MARK: - Liveness

    /// For an idle connection: false if the server has closed it or sent a FATAL since its last use.
    /// Costs one `poll` with a zero timeout.
    func isAliveWhileIdle() -> Bool {
        guard isUsable else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { return false }
        let ready = poll(&descriptor, 1, 0)
        if ready == 0 { return true }
        if ready < 0 { return errno == EINTR }
        // Readable while idle: EOF, or a message the server sends on its way out (an immediate
        // shutdown sends FATAL 57P01 before closing, and the close may not have arrived yet).
        // Nothing this layer asks for arrives unsolicited, so a readable idle connection is retired.
        return false
    }
}

/// A server-side prepared statement of one connection.
struct PreparedStatement {
    let name: String
    let types: [PostgresDataType]
}

@available(*, unavailable, message: "a connection is lent to one thread at a time; use PostgresPool")
extension PostgresConnection: Sendable {}

extension String {
    var trimmingTrailingNewlines: String {
        var result = self
        while let last = result.last, last == "\n" || last == "\r" || last == " " { result.removeLast() }
        return result
    }
}

/// A cancel handle handed to the thread that sends it.
private final class CancelBox: @unchecked Sendable {
    let cancel: OpaquePointer
    init(_ cancel: OpaquePointer) { self.cancel = cancel }
}
