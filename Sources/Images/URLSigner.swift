import Cryptography
import FoundationEssentials
import Postgres
import Synchronization

/// Signs and verifies image URLs that need no `Authorization` header (`<img>`, `AsyncImage`, a
/// CDN): `/images/{id}?exp=<unix seconds>&sig=<key id>.<HMAC-SHA-256>`, over the id, the expiry
/// with keys every instance reads from PostgreSQL (`url_signing_keys`). The size of a thumbnail
/// (`&size=N`) is not signed: whoever may see an image may see its thumbnails.
///
/// The newest key signs. A key id travels in the signature, so URLs signed before a rotation keep
/// working until they expire; keys are read again every minute, and at once (at most once a
/// second) when a URL names a key this instance has not seen.
public final class URLSigner: Sendable {
    /// How long a signed URL lives.
    public let lifetimeSeconds: Int
    /// The longest lifetime a deployment may set: retired keys are kept this long.
    public static let maxLifetimeSeconds = 7 * 86_400

    private let pool: PostgresPool
    private struct Keys {
        var secrets: [Int32: [UInt8]] = [:]
        var newest: Int32 = 0
        var loadedAt = ContinuousClock.now
    }
    private let keys = Mutex(Keys())
    /// When a URL naming an unknown key last made this instance read the keys again.
    private let lastUnknownKeyReload = Mutex<ContinuousClock.Instant?>(nil)

    /// A signer that has read no key yet: `prepare()` before the first URL.
    public init(pool: PostgresPool, lifetimeSeconds: Int) {
        self.pool = pool
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// Reads the keys, creating the first one if the deployment has none (at start).
    public func prepare() throws {
        _ = try pool.withConnection { connection in
            // Two instances starting at once may both create one; the newer simply signs.
            try connection.execute(
                """
                INSERT INTO url_signing_keys (secret)
                SELECT \(try SecureRandom.bytes(count: 32)) WHERE NOT EXISTS (SELECT 1 FROM url_signing_keys WHERE retired_at IS NULL)
                """)
        }
        try reload()
    }

    /// A new signing key; the older ones verify until a week after they were retired. Returns the new key's id.
    @discardableResult
    public static func rotate(_ connection: PostgresConnection) throws -> Int32 {
        try connection.withTransaction { connection in
            try connection.execute("UPDATE url_signing_keys SET retired_at = now() WHERE retired_at IS NULL")
            try connection.execute(
                "DELETE FROM url_signing_keys WHERE retired_at < now() - make_interval(secs => \(Double(maxLifetimeSeconds)))")
            return try connection.query("INSERT INTO url_signing_keys (secret) VALUES (\(try SecureRandom.bytes(count: 32))) RETURNING id")[0]
                .decode(Int32.self, at: 0)
        }
    }

    /// The path and query of a signed URL for an image (or one of its thumbnails), valid `lifetimeSeconds` from `now`.
    public func url(for id: UUID, now: Int = Int(Date().timeIntervalSince1970)) -> String {
        refreshIfStale()
        guard let (keyID, secret) = keys.withLock({ keys in keys.secrets[keys.newest].map { (keys.newest, $0) } }) else {
            preconditionFailure("URLSigner.url(for:) before prepare()")
        }
        let expiry = now + lifetimeSeconds
        let mac = HMAC.sha256(key: secret, message: URLSigner.message(id: id, expiry: expiry))
        return "/images/\(id.uuidString.lowercased())?exp=\(expiry)&sig=\(keyID).\(Base64URL.encode(mac))"
    }

    /// Whether `signature` signs this id and expiry with a key we hold, and the expiry has
    /// not passed; the seconds left when it does.
    public func verify(id: UUID, expiry expiryText: String?, signature: String?, now: Int = Int(Date().timeIntervalSince1970))
        -> Int?
    {
        guard let expiryText, expiryText.utf8.count <= 12, let expiry = Int(expiryText), expiry > now,
            let signature, let dot = signature.firstIndex(of: "."), let keyID = Int32(signature[..<dot]),
            let mac = Base64URL.decode(String(signature[signature.index(after: dot)...])), mac.count == SHA256.digestLength
        else { return nil }
        guard let secret = secret(keyID) else { return nil }
        let expected = HMAC.sha256(key: secret, message: URLSigner.message(id: id, expiry: expiry))
        return ConstantTime.equals(expected, mac) ? expiry - now : nil
    }

    /// `verify` with the keys this instance holds, never reading them again: for the event loop,
    /// which must not wait for the database. Nil when it cannot tell yes (the caller then asks `verify`).
    public func verifyWithKnownKeys(id: UUID, expiry expiryText: String?, signature: String?, now: Int = Int(Date().timeIntervalSince1970))
        -> Int?
    {
        guard let expiryText, expiryText.utf8.count <= 12, let expiry = Int(expiryText), expiry > now,
            let signature, let dot = signature.firstIndex(of: "."), let keyID = Int32(signature[..<dot]),
            let mac = Base64URL.decode(String(signature[signature.index(after: dot)...])), mac.count == SHA256.digestLength,
            let secret = keys.withLock({ $0.secrets[keyID] })
        else { return nil }
        let expected = HMAC.sha256(key: secret, message: URLSigner.message(id: id, expiry: expiry))
        return ConstantTime.equals(expected, mac) ? expiry - now : nil
    }

    /// What is signed: nothing a client controls goes in unvalidated, and each field is delimited.
    static func message(id: UUID, expiry: Int) -> [UInt8] {
        Array("exosphere-image-url\n\(id.uuidString.lowercased())\n\(expiry)".utf8)
    }

    private func secret(_ keyID: Int32) -> [UInt8]? {
        if let secret = keys.withLock({ $0.secrets[keyID] }) { return secret }
        // A key created by a rotation after this instance last read them: read again, once a second at most.
        let due = lastUnknownKeyReload.withLock { last in
            let now = ContinuousClock.now
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }
        if due { try? reload() }
        return keys.withLock { $0.secrets[keyID] }
    }

    /// A failed refresh keeps the keys already read: URLs still sign and verify while the database is away.
    private func refreshIfStale() {
        if keys.withLock({ ContinuousClock.now - $0.loadedAt > .seconds(60) }) { try? reload() }
    }

    private func reload() throws {
        let rows = try pool.withConnection {
            try $0.query(
                """
                SELECT id, secret FROM url_signing_keys
                WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => \(Double(URLSigner.maxLifetimeSeconds)))
                ORDER BY id
                """)
        }
        var loaded = Keys()
        for row in rows {
            let id = try row.decode(Int32.self, at: 0)
            loaded.secrets[id] = try row.decode([UInt8].self, at: 1)
            loaded.newest = max(loaded.newest, id)
        }
        guard !loaded.secrets.isEmpty else { throw PostgresError(code: .decodingFailed, context: "url_signing_keys is empty") }
        keys.withLock { $0 = loaded }
    }
}
