// Apple platforms only. Not `canImport(Security)` alone: this package has a server module named
// `Security`, which Linux builds can import.
#if canImport(Darwin) && canImport(Security)
import Foundation
import Cryptography

/// A session store in the Keychain: one generic password item (`kSecClassGenericPassword`) per
/// service and account, readable after the device's first unlock and never synced or migrated
/// to another device. The default on Apple platforms.
public struct KeychainSessionStore: SessionStore {
    /// The item's `kSecAttrService`: by default the app's bundle identifier.
    public let service: String
    /// The item's `kSecAttrAccount`: by default the server's base URL.
    public let account: String
    /// A Keychain access group shared with app extensions, or nil for the app's own.
    public let accessGroup: String?

    /// The store of one Keychain item.
    public init(service: String, account: String, accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    private var query: [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    /// The item's data, or nil when there is no item.
    public func load() throws -> Data? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw KeychainSessionStore.error(status, "SecItemCopyMatching") }
        return result as? Data
    }

    /// Updates the item, or adds it.
    public func save(_ session: Data) throws {
        let attributes: [String: Any] = [
            kSecValueData as String: session,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            let added = SecItemAdd(query.merging(attributes) { _, new in new } as CFDictionary, nil)
            guard added == errSecSuccess else { throw KeychainSessionStore.error(added, "SecItemAdd") }
        } else if status != errSecSuccess {
            throw KeychainSessionStore.error(status, "SecItemUpdate")
        }
    }

    /// Deletes the item.
    public func clear() throws {
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainSessionStore.error(status, "SecItemDelete") }
    }

    private static func error(_ status: OSStatus, _ call: String) -> NSError {
        let message = SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
        return NSError(domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: "\(call): \(message)"])
    }
}
#endif
