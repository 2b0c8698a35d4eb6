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
        /// The largest body the route reads, in bytes.
        public let bodyLimit: Int
    }

    /// The routes of the deployment `configuration` describes, built as `serve` builds them but on a
    /// database that is never contacted (the pool connects on demand, and nothing asks it to).
    public static func entries(_ configuration: Configuration) throws -> [Entry] {
        var configuration = configuration
        configuration.databaseURL = "host=/nonexistent port=1 dbname=exosphere_routes"
        configuration.databasePooler = .none
        configuration.accounts.sessionCacheBytes = 0  // no cache, so no connection reading changes
        let database = try Database.start(configuration, logger: .silent, migrate: false)
        let hashing = HashingPool(workers: 1)
        let accounts = AccountService(
            pool: database.pool, hasher: PasswordHasher(), hashing: hashing, configuration: configuration.accounts, logger: .silent)
        defer {
            accounts.shutdown()
            hashing.shutdown()
            database.shutdown()
        }
        let images = ImageService(pool: database.pool, configuration: configuration.images, logger: .silent)
        let router = Application.routes(
            database: database, accounts: accounts, images: images, signer: URLSigner(pool: database.pool, lifetimeSeconds: 3600),
            appLinks: configuration.appLinks, metrics: configuration.metricsListen == nil ? MetricsController(listing: database.pool) : nil)
        return entries(router, defaultBodyLimit: configuration.server.limits.maxBodyBytes)
    }

    static func entries(_ router: Router, defaultBodyLimit: Int) -> [Entry] {
        router.routes.map { route in
            let declaration = route.declaration as? RouteTable.Declaration
            return Entry(
                method: route.method.rawValue, path: route.pattern, policy: declaration?.policy ?? .open,
                bodyLimit: route.bodyLimit?.largest ?? defaultBodyLimit)
        }
    }

    /// Aligned columns under a header line.
    public static func text(_ entries: [Entry]) -> String {
        let header = ["METHOD", "PATH", "AUTH", "BODY", "THROTTLES", "HASHING", "AUDIT"]
        let rows =
            [header]
            + entries.map { entry in
                [
                    entry.method, entry.path, entry.policy.authentication.rawValue, bytes(entry.bodyLimit),
                    entry.policy.throttles.isEmpty ? "-" : entry.policy.throttles.sorted().map(\.rawValue).joined(separator: ","),
                    entry.policy.hashing?.rawValue ?? "-", entry.policy.audit.description,
                ]
            }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column] + String(repeating: " ", count: widths[column] - row[column].count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    /// `[{"method", "path", "authentication", "bodyLimit", "throttles", "hashing", "audit", "auditAction"}]`.
    public static func json(_ entries: [Entry]) -> String {
        var writer = JSONWriter(capacity: 16 * 1024)
        writer.beginArray()
        for entry in entries {
            writer.beginObject()
            writer.key("method"); writer.string(entry.method)
            writer.key("path"); writer.string(entry.path)
            writer.key("authentication"); writer.string(entry.policy.authentication.rawValue)
            writer.key("bodyLimit"); writer.int(entry.bodyLimit)
            writer.key("throttles")
            writer.beginArray()
            for throttle in entry.policy.throttles.sorted() { writer.string(throttle.rawValue) }
            writer.endArray()
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
