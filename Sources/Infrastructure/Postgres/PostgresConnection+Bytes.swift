import CLibPQ
import FoundationEssentials
import Glibc
import Threads

/// Large binary values (images) in and out without the copies the text paths make: a bytea
/// parameter is copied into the bindings, then into libpq's buffer; a bytea in a text result
/// arrives as hex, twice its size. These stream the bytes to the server in binary `COPY` chunks and
/// read them back in binary results.
extension PostgresConnection {
    /// Runs `COPY … FROM STDIN (FORMAT binary)` with the rows `write` produces; returns the rows copied.
    ///
    /// `sql` is a fixed statement (no parameters exist in COPY); the values travel in the data.
    /// A throw from `write` aborts the COPY (nothing is inserted) and is rethrown.
    @discardableResult
    public func copyIn(_ sql: StaticString, _ write: (inout PostgresCopyWriter) throws -> Void) throws -> Int {
        guard !isClosed else { throw PostgresError(code: .connectionFailed, context: "the connection is closed") }
        let text = UnsafeRawPointer(sql.utf8Start).assumingMemoryBound(to: CChar.self)
        guard let started = try awaitResult(PQsendQuery(handle, text)) else {
            isBroken = true
            throw PostgresError(code: .connectionFailed, context: errorMessage)
        }
        guard PQresultStatus(started) == PGRES_COPY_IN else {
            _ = try check(started)  // throws the server's error
            PQclear(started)
            throw PostgresError(code: .queryFailed, context: "the statement did not start COPY FROM STDIN")
        }
        PQclear(started)
        // Non-blocking while the data goes out, so that a server that stops reading (frozen,
        // partitioned away) costs at most the response timeout per wait, not the upload forever.
        PQsetnonblocking(handle, 1)
        defer { if !isClosed { PQsetnonblocking(handle, 0) } }
        var writer = PostgresCopyWriter(connection: self)
        do {
            try writer.start()
            try write(&writer)
            try writer.finish()
        } catch let error as PostgresError where error.code == .timedOut {
            throw error  // the connection is abandoned already
        } catch {
            _ = PQputCopyEnd(handle, "aborted by the client")
            _ = try? flushCopy()
            drainResults()
            throw error
        }
        while true {
            let ended = PQputCopyEnd(handle, nil)
            if ended == 1 { break }
            guard ended == 0 else {
                isBroken = true
                throw PostgresError(code: .connectionFailed, context: errorMessage)
            }
            try waitUntilWritable()
        }
        try flushCopy()
        var copied = 0
        var failure: Error?
        while let result = try awaitNextResult() {
            if failure == nil {
                do {
                    let rows = PostgresRows(result: try check(result))
                    copied = rows.affectedRows
                } catch {
                    failure = error
                }
            } else {
                PQclear(result)
            }
        }
        if let failure { throw failure }
        return copied
    }

    /// The single value of a one-column query, read in binary format: for `bytea` the raw bytes,
    /// for `substring(bytes FROM … FOR …)` only that slice. Nil when there is no row or the value is NULL.
    public func fetchBytes(_ query: PostgresQuery) throws -> [UInt8]? {
        let result = try run(query, binaryResults: true)
        guard result.rowCount > 0, result.columnCount == 1, PQgetisnull(result.handle, 0, 0) == 0 else { return nil }
        let length = Int(PQgetlength(result.handle, 0, 0))
        guard length > 0, let value = PQgetvalue(result.handle, 0, 0) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: value, count: length))
    }

    func sendCopyData(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        let base = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
        // libpq takes an Int32 length; 1 MiB pieces keep its buffer small.
        var offset = 0
        while offset < bytes.count {
            let piece = min(1 << 20, bytes.count - offset)
            switch PQputCopyData(handle, base + offset, Int32(piece)) {
            case 1:
                offset += piece
            case 0:
                // Non-blocking and libpq's buffer is full: wait until the server takes some.
                try waitUntilWritable()
            default:
                isBroken = true
                throw PostgresError(code: .connectionFailed, context: errorMessage)
            }
        }
    }

    /// Pushes what libpq holds of the COPY data to the server, waiting as `waitUntilWritable` does.
    private func flushCopy() throws {
        while true {
            let status = PQflush(handle)
            if status == 0 { return }
            guard status == 1 else {
                isBroken = true
                throw PostgresError(code: .connectionFailed, context: errorMessage)
            }
            try waitUntilWritable()
        }
    }

    /// Waits for the socket to take more (and lets libpq read what the server sent meanwhile);
    /// past the response timeout (or the request's deadline) the connection is abandoned and
    /// `timedOut` thrown.
    private func waitUntilWritable() throws {
        let deadline = answerDeadline()
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLOUT | POLLIN), revents: 0)
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let now = monotonicNanoseconds()
                timeout = now < deadline ? Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000)) : 0
            }
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0, errno == EINTR { continue }
            if ready == 0 {
                abandon()
                throw noAnswer("the server took no data")
            }
            if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 {
                isBroken = true
                throw PostgresError(code: .connectionFailed, context: errorMessage)
            }
            if ready < 0 || descriptor.revents & Int16(POLLERR | POLLHUP) != 0 {
                isBroken = true
                throw PostgresError(code: .connectionFailed, context: errorMessage)
            }
            return
        }
    }

    private func drainResults() {
        while let result = PQgetResult(handle) { PQclear(result) }
    }
}

/// Writes rows in PostgreSQL's binary COPY format; large values go to libpq without being copied here.
public struct PostgresCopyWriter: ~Copyable {
    private let connection: PostgresConnection
    /// Small pieces (header, field lengths, short values), sent before any large value.
    private var staged: [UInt8] = []

    init(connection: PostgresConnection) {
        self.connection = connection
        staged.reserveCapacity(256)
    }

    mutating func start() throws {
        // Signature, flags (no OIDs), header extension length.
        staged.append(contentsOf: Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00])
        appendInt32(0)
        appendInt32(0)
    }

    mutating func finish() throws {
        appendInt16(-1)
        try flush()
    }

    /// Starts a row of `fields` values, which must follow in column order.
    public mutating func beginRow(fields: Int) {
        appendInt16(Int16(fields))
    }

    public mutating func uuid(_ value: UUID) {
        appendInt32(16)
        withUnsafeBytes(of: value.uuid) { staged.append(contentsOf: $0) }
    }

    /// A bytea (or any binary value) sent straight from `bytes`.
    public mutating func bytes(_ bytes: UnsafeRawBufferPointer) throws {
        appendInt32(Int32(bytes.count))
        try flush()
        try connection.sendCopyData(bytes)
    }

    private mutating func flush() throws {
        guard !staged.isEmpty else { return }
        try staged.withUnsafeBytes { try connection.sendCopyData($0) }
        staged.removeAll(keepingCapacity: true)
    }

    private mutating func appendInt32(_ value: Int32) {
        withUnsafeBytes(of: value.bigEndian) { staged.append(contentsOf: $0) }
    }

    private mutating func appendInt16(_ value: Int16) {
        withUnsafeBytes(of: value.bigEndian) { staged.append(contentsOf: $0) }
    }
}
