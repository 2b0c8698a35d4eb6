import Accounts
import Cryptography
import HTTPServer
import Images
import JSON
import Postgres
import StructuredLogging

/// `exosphere routes`: the route table as an operator reviews a deployment (as `vapor routes` and
/// `rails routes` print theirs): one route a line with its authentication, body limit, throttles,
/// password hashing and audit, or (`--json`) an array of objects. It is read from the very table
/// the server routes with, so it cannot drift from it.
public enum RouteListing {
    /// One route as listed.
    public struct Entry: Sendable, Equatable {
        public let method: String
        public let path: String
        public let policy: RoutePolicy
        /// Where its handler runs: `loop`, `pipelined` (the loop when pipelines are on) or `workers`.
        public let execution: String
        /// The largest body the route reads, in bytes.
        public let bodyLimit: Int

        init(_ route: RouteTable.Declaration) {
            method = route.method.rawValue
            path = route.pattern
            policy = route.policy
            execution = route.execution.rawValue
            bodyLimit = route.bodyLimit
        }
    }

    /// The routes of the deployment `configuration` describes, read from their declarations: no
    /// database is opened and no service started.
    public static func entries(_ configuration: Configuration) -> [Entry] {
        Application.declarations(configuration).map(Entry.init)
    }

    /// The routes a running server routes with, from the declarations its router keeps.
    static func entries(_ router: Router) -> [Entry] {
        router.routes.compactMap { ($0.declaration as? RouteTable.Declaration).map(Entry.init) }
    }

    /// Aligned columns under a header line.
    public static func text(_ entries: [Entry]) -> String {
        let header = ["METHOD", "PATH", "AUTH", "REQUIRES", "RUNS ON", "BODY", "THROTTLES", "OPEN", "HASHING", "AUDIT"]
        let rows =
            [header]
            + entries.map { entry in
                [
                    entry.method, entry.path, entry.policy.authentication.rawValue,
                    entry.policy.requirements.isEmpty ? "-" : entry.policy.requirements.sorted().map(\.rawValue).joined(separator: ","),
                    entry.execution, bytes(entry.bodyLimit),
                    entry.policy.throttles.isEmpty ? "-" : entry.policy.throttles.sorted().map(\.rawValue).joined(separator: ","),
                    entry.policy.openPerUser.map { "\($0)/user" } ?? "-", entry.policy.hashing?.rawValue ?? "-", entry.policy.audit.description,
                ]
            }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column] + String(repeating: " ", count: widths[column] - row[column].count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `[{"method", "path", "authentication", "requires", "execution", "bodyLimit", "throttles", "openPerUser", "hashing", "audit",
    /// "auditAction"}]`.
    public static func json(_ entries: [Entry]) -> String {
        var writer = JSONWriter(capacity: 16 * 1024)
        writer.beginArray()
        for entry in entries {
            writer.beginObject()
            writer.key("method"); writer.string(entry.method)
            writer.key("path"); writer.string(entry.path)
            writer.key("authentication"); writer.string(entry.policy.authentication.rawValue)
            writer.key("requires")
            writer.beginArray()
            for requirement in entry.policy.requirements.sorted() { writer.string(requirement.rawValue) }
            writer.endArray()
            writer.key("execution"); writer.string(entry.execution)
            writer.key("bodyLimit"); writer.int(entry.bodyLimit)
            writer.key("throttles")
            writer.beginArray()
            for throttle in entry.policy.throttles.sorted() { writer.string(throttle.rawValue) }
            writer.endArray()
            writer.key("openPerUser")
            if let open = entry.policy.openPerUser { writer.int(open) } else { writer.null() }
            writer.key("hashing")
            if let hashing = entry.policy.hashing { writer.string(hashing.rawValue) } else { writer.null() }
            writer.key("audit")
            switch entry.policy.audit {
            case .none: writer.null()
            case .read: writer.string("read")
            case .change: writer.string("change")
            }
            writer.key("auditAction")
            if case .read(let action) = entry.policy.audit { writer.string(action) } else { writer.null() }
            writer.endObject()
        }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// `1 MiB`, `64 KiB`, or the count of bytes when it is neither.
    static func bytes(_ count: Int) -> String {
        if count >= 1 << 20, count % (1 << 20) == 0 { return "\(count >> 20) MiB" }
        if count >= 1 << 10, count % (1 << 10) == 0 { return "\(count >> 10) KiB" }
        return "\(count) B"
    }
}
