import Cryptography
import FoundationEssentials
import Postgres
import Synchronization
import Threads
import Time

/// Signs and verifies image URLs that need no `Authorization` header (`<img>`, `AsyncImage`, a
/// CDN): `/images/{id}?exp=<unix seconds>[&size=N]&sig=<key id>.<HMAC-SHA-256>`, over the id, the
/// expiry and the rendition (the original, or one thumbnail size), with keys every instance reads
/// from PostgreSQL (`url_signing_keys`). The rendition is signed: a leaked thumbnail URL stripped
/// of its `size` does not open the original, whose metadata may hold a location.
///
/// The newest key signs. A key id travels in the signature, so URLs signed before a rotation keep
/// working until they expire. Keys are read again every `refreshInterval` by a thread of their
/// own once `startRefreshing()` has run (a revoked key is distrusted by every instance within
/// that, whether or not it signs), and at once (at most once a second) when a URL names a key
/// this instance has not seen.
public final class URLSigner: Sendable {
    /// How long a signed URL lives.
    public let lifetimeSeconds: Int
    /// The longest lifetime a deployment may set: retired keys are kept this long.
    public static let maxLifetimeSeconds = 7 * 86_400
    /// How often the keys are read again: a revoked key is distrusted within this.
    public static let refreshInterval = Duration.seconds(2)

    /// What a signed URL opens: the original or one thumbnail size, and nothing else.
    public enum Rendition: Sendable, Hashable {
        case original
        case thumbnail(size: Int)

        /// The rendition of a request's `size` parameter: the original without one; nil for a
        /// value that is no size (such a URL cannot verify).
        public init?(sizeParameter: String?) {
            guard let sizeParameter else {
                self = .original
                return
            }
            guard sizeParameter.utf8.count <= 5, let size = Int(sizeParameter), size > 0 else { return nil }
            self = .thumbnail(size: size)
        }

        var signedText: String {
            switch self {
            case .original: "original"
            case .thumbnail(let size): "thumbnail-\(size)"
            }
        }
    }

    private let pool: PostgresPool
    /// What URLs expire by, unless a call says `now`.
    private let clock: WallClock
    private struct Keys {
        var secrets: [Int32: [UInt8]] = [:]
        var newest: Int32 = 0
    }
    private let keys = Mutex(Keys())
    /// When a URL naming an unknown key last made this instance read the keys again.
    private let lastUnknownKeyReload = Mutex<ContinuousClock.Instant?>(nil)
    private let refresher = PeriodicThread(
        name: "url-keys", intervalNanoseconds: UInt64(URLSigner.refreshInterval.components.seconds) * 1_000_000_000)

    /// A signer that has read no key yet: `prepare()` before the first URL.
    public init(pool: PostgresPool, lifetimeSeconds: Int, clock: WallClock = .system) {
        self.pool = pool
        self.clock = clock
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

    /// Reads the keys again every `refreshInterval` until `shutdown()`. A failed read keeps the
    /// keys already read: URLs still sign and verify while the database is away.
    public func startRefreshing() {
        refresher.start { [weak self] in try? self?.reload() }
    }

    public func shutdown() {
        refresher.stop()
    }

    /// Ends a key at once (`exosphere keys revoke`): the URLs it signed stop working on every
    /// instance within `refreshInterval`. Revoking the key that signs makes a new one first, so
    /// that URLs are still signed. False when there is no such key.
    @discardableResult
    public static func revoke(_ connection: PostgresConnection, keyID: Int32) throws -> Bool {
        try connection.withTransaction { connection in
            let signing = try connection.query("SELECT id FROM url_signing_keys WHERE retired_at IS NULL FOR UPDATE")
                .map { try $0.decode(Int32.self, at: 0) }
            guard try !connection.query("SELECT 1 FROM url_signing_keys WHERE id = \(keyID)").isEmpty else { return false }
            if signing.contains(keyID) {
                try connection.execute("UPDATE url_signing_keys SET retired_at = now() WHERE retired_at IS NULL")
                try connection.execute("INSERT INTO url_signing_keys (secret) VALUES (\(try SecureRandom.bytes(count: 32)))")
            }
            return try connection.execute("DELETE FROM url_signing_keys WHERE id = \(keyID)") == 1
        }
    }

    /// The keys this instance trusts now, by id (for tests and `exosphere keys`).
    public var trustedKeyIDs: [Int32] { keys.withLock { $0.secrets.keys.sorted() } }

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

    /// The path and query of a signed URL for an image's `rendition`, valid `lifetimeSeconds` from
    /// `now` (Unix seconds; the clock's when nil).
    public func url(for id: UUID, _ rendition: Rendition = .original, now: Int? = nil) -> String {
        urls(for: id, [rendition], now: now)[0]
    }

    /// Signed URLs of several renditions of an image, with one expiry and one read of the keys.
    public func urls(for id: UUID, _ renditions: [Rendition], now: Int? = nil) -> [String] {
        guard let (keyID, secret) = keys.withLock({ keys in keys.secrets[keys.newest].map { (keys.newest, $0) } }) else {
            preconditionFailure("URLSigner.url(for:) before prepare()")
        }
        let expiry = (now ?? unixNow()) + lifetimeSeconds
        let path = "/images/\(id.uuidString.lowercased())?exp=\(expiry)"
        return renditions.map { rendition in
            let mac = HMAC.sha256(key: secret, message: URLSigner.message(id: id, expiry: expiry, rendition: rendition))
            let size = if case .thumbnail(let size) = rendition { "&size=\(size)" } else { "" }
            return path + size + "&sig=\(keyID).\(Base64URL.encode(mac))"
        }
    }

    /// Whether `signature` signs this id, expiry and rendition with a key we hold, and the expiry
    /// has not passed at `now` (the clock's when nil); the seconds left when it does.
    public func verify(id: UUID, expiry expiryText: String?, signature: String?, rendition: Rendition, now: Int? = nil) -> Int? {
        let now = now ?? unixNow()
        guard let (expiry, keyID, mac) = URLSigner.parse(expiry: expiryText, signature: signature, now: now),
            let secret = secret(keyID)
        else { return nil }
        return URLSigner.matches(mac, secret: secret, id: id, expiry: expiry, rendition: rendition) ? expiry - now : nil
    }

    /// `verify` with the keys this instance holds, never reading them again: for the event loop,
    /// which must not wait for the database. Nil when it cannot tell yes (the caller then asks `verify`).
    public func verifyWithKnownKeys(
        id: UUID, expiry expiryText: String?, signature: String?, rendition: Rendition, now: Int? = nil
    ) -> Int? {
        let now = now ?? unixNow()
        guard let (expiry, keyID, mac) = URLSigner.parse(expiry: expiryText, signature: signature, now: now),
            let secret = keys.withLock({ $0.secrets[keyID] })
        else { return nil }
        return URLSigner.matches(mac, secret: secret, id: id, expiry: expiry, rendition: rendition) ? expiry - now : nil
    }

    /// The clock's time in whole Unix seconds.
    private func unixNow() -> Int { Int(clock.now().timeIntervalSince1970) }

    /// The expiry, key id and MAC of a URL's parameters, when they are well formed and unexpired.
    private static func parse(expiry expiryText: String?, signature: String?, now: Int) -> (Int, Int32, [UInt8])? {
        guard let expiryText, expiryText.utf8.count <= 12, let expiry = Int(expiryText), expiry > now,
            let signature, let dot = signature.firstIndex(of: "."), let keyID = Int32(signature[..<dot]),
            let mac = Base64URL.decode(String(signature[signature.index(after: dot)...])), mac.count == SHA256.digestLength
        else { return nil }
        return (expiry, keyID, mac)
    }

    /// Compared in constant time. A URL signed before renditions were (over the id and expiry
    /// alone, at most `maxLifetimeSeconds` ago) still opens the original, and nothing else.
    private static func matches(_ mac: [UInt8], secret: [UInt8], id: UUID, expiry: Int, rendition: Rendition) -> Bool {
        if ConstantTime.equals(HMAC.sha256(key: secret, message: message(id: id, expiry: expiry, rendition: rendition)), mac) { return true }
        return rendition == .original && ConstantTime.equals(HMAC.sha256(key: secret, message: legacyMessage(id: id, expiry: expiry)), mac)
    }

    /// What is signed: nothing a client controls goes in unvalidated, and each field is delimited.
    static func message(id: UUID, expiry: Int, rendition: Rendition) -> [UInt8] {
        Array("exosphere-image-url-v2\n\(id.uuidString.lowercased())\n\(expiry)\n\(rendition.signedText)".utf8)
    }

    /// The message of URLs signed before the rendition was: the original only.
    static func legacyMessage(id: UUID, expiry: Int) -> [UInt8] {
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
            let id = try row.decode(Int32.self, column: "id")
            loaded.secrets[id] = try row.decode([UInt8].self, column: "secret")
            loaded.newest = max(loaded.newest, id)
        }
        guard !loaded.secrets.isEmpty else { throw PostgresError(code: .decodingFailed, context: "url_signing_keys is empty") }
        keys.withLock { $0 = loaded }
    }
}
