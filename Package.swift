// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Exosphere",
    // For the client library; the server builds on Linux only.
    platforms: [.macOS(.v12), .iOS(.v15)],
    products: [
        .executable(name: "exosphere", targets: ["exosphere"]),
        // The Swift client an iOS app uses: Foundation only, no module of the server.
        .library(name: "ExosphereClient", targets: ["ExosphereClient"]),
    ],
    targets: [
        // C shims: module maps and headers only.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),

        // HTTP/1.1 messages, parser and serializer: no Foundation, no I/O.
        .target(name: "HTTP"),
        // Threads, a condition lock and a bounded thread pool for blocking work.
        .target(name: "Threads", dependencies: ["CLinux"]),
        // Reading whole small files with plain system calls.
        .target(name: "Files"),
        // Structured JSON / logfmt log lines.
        .target(name: "Logging", dependencies: ["JSON"]),
        // Sockets, event loops, connections, routing, graceful shutdown.
        .target(name: "HTTPServer", dependencies: ["HTTP", "CLinux", "JSON", "Logging", "Threads", "Files"]),
        // A strict JSON value type with limits: no Foundation.
        .target(name: "JSON"),
        // libpq client, pool, bound queries, migrations, a managed local cluster.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Files", "Threads"]),
        .target(name: "Security", dependencies: ["COpenSSL", "Threads"]),
        // The event loops' pipelined database connections and the executor handlers use on them.
        .target(name: "PostgresLoop", dependencies: ["Postgres", "HTTPServer", "HTTP", "Logging", "Threads"]),
        // Users' images: format inspection (pure), the two storages, their SQL and files.
        .target(name: "Images", dependencies: ["Postgres", "Security", "Files", "Logging", "Threads"]),
        // Users, custom fields, sessions, throttles: rules and their SQL.
        .target(name: "Accounts", dependencies: ["Postgres", "Security", "JSON", "Logging", "Threads"]),
        // The SQL of migrations/, compiled in at build time (Plugins/EmbedMigrations).
        .executableTarget(name: "embed-migrations"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["embed-migrations"]),
        .target(name: "Migrations", plugins: ["EmbedMigrations"]),
        // Routes, DTOs, error mapping, configuration.
        .target(name: "API", dependencies: ["HTTPServer", "HTTP", "JSON", "Logging", "Postgres", "Security", "Accounts", "Images", "Threads", "Files", "CLinux", "Migrations", "PostgresLoop"]),
        .executableTarget(name: "exosphere", dependencies: ["API"]),
        // The client library for apps (iOS 15+, macOS 12+, Linux): depends on nothing here.
        .target(name: "ExosphereClient"),
        // Benchmark of the Postgres module against pgbench (bench/postgres.sh).
        .executableTarget(name: "exosphere-dbbench", dependencies: ["Postgres"]),

        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTP", "Files"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "SecurityTests", dependencies: ["Security", "Threads"]),
        // What several test targets share: image builders, embedded real images, a seeded generator.
        .target(name: "TestSupport", dependencies: ["Files"], path: "Tests/TestSupport"),
        .testTarget(name: "ImagesTests", dependencies: ["Images", "TestSupport"]),
        .testTarget(name: "APITests", dependencies: ["API", "Files", "Images", "Migrations", "TestSupport"]),
        // The client against a real server started in-process on a throwaway PostgreSQL.
        .testTarget(name: "ExosphereClientTests", dependencies: ["ExosphereClient", "API", "Postgres", "Logging", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
