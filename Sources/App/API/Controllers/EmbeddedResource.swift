/// The files of `Resources/` (the console, the pages, the OpenAPI document), compiled in by the
/// `EmbedFiles` build plugin as `EmbeddedResources.files` and read into bytes once, at first use.
enum EmbeddedResource {
    private static let byName: [String: [UInt8]] = Dictionary(
        uniqueKeysWithValues: EmbeddedResources.files.map { ($0.name, Array($0.contents.utf8)) })

    /// The bytes of `Resources/<name>`. A name no file has is a programming error, caught by any
    /// test that starts the server (every controller reads its files when it registers).
    static func bytes(_ name: String) -> [UInt8] {
        guard let bytes = byName[name] else { preconditionFailure("no embedded resource Resources/\(name)") }
        return bytes
    }
}
