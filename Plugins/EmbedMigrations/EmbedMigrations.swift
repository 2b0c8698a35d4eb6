import Foundation
import PackagePlugin

/// Compiles the repository's `migrations/*.sql` into the target as `EmbeddedMigrations.files`, so
/// that the binary carries its schema and starts from any working directory.
@main struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "migrations")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sql") }.sorted()
        let inputs = names.map { directory.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(names.count) migrations", executable: try context.tool(named: "embed-migrations").url,
                arguments: [output.path] + inputs.map(\.path), inputFiles: inputs, outputFiles: [output])
        ]
    }
}
