import Files

/// A new, empty directory `/tmp/<prefix>-<random>`, readable by others: a managed PostgreSQL
/// started inside it runs as the `postgres` user when the tests run as root.
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    try FileSystem.createTemporaryDirectory(prefix: prefix, mode: 0o755)
}
