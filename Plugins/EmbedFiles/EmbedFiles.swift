import Foundation
import PackagePlugin

/// Compiles files into a target as string literals, so that the binary carries them and starts
/// from any working directory:
///
/// - in `Migrations`, the repository's `migrations/*.sql` as `EmbeddedMigrations.files`;
/// - in any other target, every file under the target's `Resources/` (the console, the pages,
///   the OpenAPI document) as `EmbeddedResources.files`, named by their path under `Resources/`.
///
/// One string literal a file: the compiler lexes it in milliseconds, where `.embedInCode`'s array
/// of byte literals (a megabyte of them) took minutes to type-check. The files must be UTF-8 text.
@main struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let (root, enumName, names): (URL, String, [String])
        if target.name == "Migrations" {
            root = context.package.directoryURL.appending(path: "migrations")
            enumName = "EmbeddedMigrations"
            names = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".sql") }.sorted()
        } else {
            root = target.directoryURL.appending(path: "Resources")
            enumName = "EmbeddedResources"
            names = try Self.files(under: root)
        }
        let inputs = names.map { root.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: enumName + ".swift")
        return [
            .buildCommand(
                displayName: "Embedding \(names.count) files as \(enumName)", executable: try context.tool(named: "embed-files").url,
                arguments: [output.path, enumName, root.path] + inputs.map(\.path), inputFiles: inputs, outputFiles: [output])
        ]
    }

    /// Every regular file under `root`, as a path relative to it, sorted.
    static func files(under root: URL) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: root.path) else { return [] }
        var names: [String] = []
        while let name = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appending(path: name).path, isDirectory: &isDirectory), !isDirectory.boolValue {
                names.append(name)
            }
        }
        return names.sorted()
    }
}
