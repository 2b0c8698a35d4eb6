import Files
import FoundationEssentials
import Glibc

/// The development mailbox: each message an `.eml` file in a directory, for a developer to open
/// instead of running a relay.
public struct DevMailbox: Sendable {
    public let directory: String

    /// The directory is created (mode 0700: messages hold reset links) on the first delivery.
    public init(directory: String) {
        self.directory = directory
    }

    /// Writes the message atomically (a temporary name, fsync, rename) and returns its path,
    /// `<directory>/<milliseconds since 1970>-<message ID>.eml`, so that names sort by date.
    public func deliver(_ message: MailMessage) throws -> String {
        try FileSystem.createDirectory(directory, mode: 0o700)
        let safeID = String(String.UnicodeScalarView(message.messageID.unicodeScalars.map { Self.isSafe($0) ? $0 : "_" }).prefix(100))
        let name = "\(Int64((message.date.timeIntervalSince1970 * 1000).rounded(.down)))-\(safeID).eml"
        let path = "\(directory)/\(name)"
        // A random part keeps two deliveries of the same message from colliding on the temporary name.
        let temporary = "\(directory)/.\(name).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let bytes = message.rendered()
        try bytes.withUnsafeBytes { try FileSystem.writeNewFile(temporary, $0, sync: true, mode: 0o600) }
        do throws(FileSystemError) {
            try FileSystem.rename(temporary, to: path)
        } catch {
            _ = try? FileSystem.remove(temporary)  // the rename's error is the one to report
            throw error
        }
        try FileSystem.syncDirectory(directory)
        return path
    }

    private static func isSafe(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || "@._-".unicodeScalars.contains(scalar)
    }
}
