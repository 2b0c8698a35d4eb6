// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Exosphere",
    // For the client library; the server builds on Linux only.
    platforms: [.macOS(.v12), .iOS(.v15)],
    products: [
        .executable(name: "exosphere", targets: ["exosphere"]),
        // The thumbnail helper `exosphere serve` starts: the only executable that loads libvips.
        .executable(name: "exosphere-thumbnailer", targets: ["exosphere-thumbnailer"]),
        // The Swift client an iOS app uses: Foundation only, no module of the server.
        .library(name: "ExosphereClient", targets: ["ExosphereClient"]),
    ],
    targets: [
        // C shims: module maps and headers only.
        .systemLibrary(name: "CLinux", path: "Sources/Shims/CLinux"),
        .systemLibrary(
            name: "CLibPQ", path: "Sources/Shims/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/Shims/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CVips", path: "Sources/Shims/CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),

        // A blocking HTTP/1.1 client connection: the health check's and the tests'.
        .target(name: "SocketClient", path: "Sources/Infrastructure/SocketClient"),
        // The proleptic Gregorian calendar: dates to and from days since 1970.
        .target(name: "CivilTime", path: "Sources/Base/CivilTime"),
        // The wall clock that lifetimes, throttle windows and expiries read (tests move it). No dependencies.
        .target(name: "Time", path: "Sources/Base/Time"),
        // HTTP/1.1 messages, parser and serializer: no Foundation, no I/O.
        .target(name: "HTTP", dependencies: ["CivilTime"], path: "Sources/Protocols/HTTP"),
        // Threads, a condition lock and a bounded thread pool for blocking work.
        .target(name: "Threads", dependencies: ["CLinux"], path: "Sources/Base/Threads"),
        // Reading whole small files with plain system calls.
        .target(name: "Files", path: "Sources/Base/Files"),
        // Structured JSON / logfmt log lines.
        .target(name: "StructuredLogging", dependencies: ["JSON"], path: "Sources/Base/StructuredLogging"),
        // Services that start in order and stop in reverse, on shutdown and on a failed start alike.
        .target(name: "Lifecycle", dependencies: ["StructuredLogging"], path: "Sources/Base/Lifecycle"),
        // What handlers' own I/O needs of an event loop (`LoopScheduler`, `LoopSource`), apart from the server.
        .target(name: "LoopInterface", path: "Sources/Infrastructure/LoopInterface"),
        // Sockets, event loops, connections, routing, graceful shutdown.
        .target(
            name: "HTTPServer", dependencies: ["HTTP", "CLinux", "JSON", "LoopInterface", "StructuredLogging", "Threads", "Files"],
            path: "Sources/Infrastructure/HTTPServer"),
        // A strict JSON value type with limits: no Foundation.
        .target(name: "JSON", path: "Sources/Base/JSON"),
        // libpq client, pool, bound queries, migrations.
        .target(name: "Postgres", dependencies: ["CivilTime", "CLibPQ", "Files", "Threads"], path: "Sources/Infrastructure/Postgres"),
        // A PostgreSQL cluster this process creates, starts, supervises and stops.
        .target(name: "PostgresCluster", dependencies: ["Postgres", "CLibPQ", "Files"], path: "Sources/Infrastructure/PostgresCluster"),
        // Password hashing (scrypt) on a bounded pool, session tokens, digests, constant-time comparison.
        .target(name: "Cryptography", dependencies: ["COpenSSL", "Threads"], path: "Sources/Base/Cryptography"),
        // OpenID Connect ID tokens (Sign in with Apple, Google): key sets and checked tokens.
        .target(name: "IdentityTokens", dependencies: ["Cryptography", "JSON"], path: "Sources/Protocols/IdentityTokens"),
        // Passkeys (WebAuthn Level 3) for a relying party: CBOR, COSE keys, authenticator and client
        // data, the registration's attestation (none, packed) and the sign-in's assertion.
        .target(name: "WebAuthn", dependencies: ["Cryptography", "JSON"], path: "Sources/Protocols/WebAuthn"),
        // A second factor: time-based one-time passwords (RFC 6238), base32, and the QR code that
        // shows their otpauth URI, drawn as SVG.
        .target(name: "OneTimePasswords", dependencies: ["Cryptography"], path: "Sources/Protocols/OneTimePasswords"),
        // AWS Signature Version 4: canonical requests, signing keys, Authorization fields and
        // presigned URLs, as values (no clock, no I/O).
        .target(name: "AWSSignature", dependencies: ["CivilTime", "Cryptography"], path: "Sources/Protocols/AWSSignature"),
        // The event loops' pipelined database connections and the executor handlers use on them.
        .target(
            name: "PostgresLoop", dependencies: ["Postgres", "LoopInterface", "StructuredLogging", "Threads"],
            path: "Sources/Infrastructure/PostgresLoop"),
        // Connections this process opens: TCP with deadlines, the TLS client (OpenSSL, certificates
        // and names verified), and a one-shot HTTP GET (a sign-in provider's key set).
        .target(name: "Outbound", dependencies: ["COpenSSL", "CLinux"], path: "Sources/Infrastructure/Outbound"),
        // An S3 client for one bucket over Outbound's HTTP/1.1: SigV4-signed, keep-alive, bounded.
        .target(
            name: "ObjectStorage", dependencies: ["AWSSignature", "Cryptography", "Outbound", "Threads"], path: "Sources/Infrastructure/ObjectStorage"
        ),
        // Mail transport: RFC 5322/MIME messages, an SMTP client (over Outbound's TLS), the dev mailbox.
        .target(name: "Mail", dependencies: ["CivilTime", "COpenSSL", "Files", "Outbound"], path: "Sources/Infrastructure/Mail"),
        // The transactional mail outbox: its SQL, the templates, and the sender every instance runs.
        .target(name: "Outbox", dependencies: ["Mail", "Postgres", "JSON", "StructuredLogging", "Threads", "Files"], path: "Sources/Domain/Outbox"),
        // Thumbnails seen from the server: the helper processes' pool, the frames to and from them,
        // BlurHash and the dominant colour. No image decoding.
        .target(name: "Thumbnails", dependencies: ["CLinux", "StructuredLogging", "Threads"], path: "Sources/Infrastructure/Thumbnails"),
        // `exosphere-thumbnailer`: the helper process that decodes images with libvips, confined.
        .target(name: "ThumbnailWorker", dependencies: ["CVips", "CLinux", "Thumbnails"], path: "Sources/Executables/ThumbnailWorker"),
        // Users' images: format inspection (pure), the two storages, thumbnails, their SQL and files.
        .target(
            name: "Images",
            dependencies: [
                "CivilTime", "ObjectStorage", "Postgres", "Cryptography", "Files", "StructuredLogging", "Threads", "Thumbnails", "Time", "Zip",
            ],
            path: "Sources/Domain/Images"),
        // Users, custom fields, sessions, throttles, recovery tokens, activity: rules and their SQL.
        .target(
            name: "Accounts",
            dependencies: [
                "CivilTime", "Postgres", "Time", "Cryptography", "JSON", "Outbox", "StructuredLogging", "Threads", "WebAuthn", "OneTimePasswords",
            ],
            path: "Sources/Domain/Accounts"),
        // Text files compiled in at build time as string literals (Plugins/EmbedFiles): the SQL of
        // migrations/, and the API's Resources/.
        .executableTarget(name: "embed-files", path: "Sources/Executables/embed-files"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),
        .target(name: "Migrations", path: "Sources/Infrastructure/Migrations", plugins: ["EmbedFiles"]),
        // ZIP archives written as streams (the data export): their layout, and CRC-32 (PNG's too). No dependencies.
        .target(name: "Zip", path: "Sources/Base/Zip"),
        // Live changes: the open event streams of an instance, fed by LISTEN/NOTIFY and catch-up reads.
        .target(name: "LiveEvents", dependencies: ["HTTP", "Postgres", "StructuredLogging", "Threads"], path: "Sources/Domain/LiveEvents"),
        // Routes, DTOs, error mapping, configuration.
        .target(
            name: "API",
            dependencies: [
                "HTTPServer", "HTTP", "JSON", "StructuredLogging", "Postgres", "Cryptography", "Accounts", "Images", "Threads", "Files", "CLinux",
                "LoopInterface", "Migrations", "PostgresLoop", "PostgresCluster", "Mail", "Outbox", "Thumbnails", "Zip", "LiveEvents",
                "IdentityTokens", "Outbound", "Time", "WebAuthn", "Lifecycle", "ObjectStorage",
            ], path: "Sources/App/API",
            // Resources/ (the console, the pages, the OpenAPI document) is compiled in as string
            // literals by the EmbedFiles build plugin: see EmbeddedResources.
            exclude: ["Resources"], plugins: ["EmbedFiles"]),
        // The command line: parsing it, serve, migrate, images migrate, healthcheck, hash-benchmark.
        .executableTarget(
            name: "exosphere",
            dependencies: [
                "API", "Accounts", "AWSSignature", "Cryptography", "HTTPServer", "Images", "Mail", "ObjectStorage", "Postgres",
                "SocketClient", "StructuredLogging", "Threads", "Thumbnails",
            ], path: "Sources/Executables/exosphere"),
        // The thumbnail helper: libvips, confined, one image at a time (ThumbnailWorker).
        .executableTarget(name: "exosphere-thumbnailer", dependencies: ["ThumbnailWorker"], path: "Sources/Executables/exosphere-thumbnailer"),
        // The client library for apps (iOS 15+, macOS 12+, Linux): depends on nothing here.
        .target(name: "ExosphereClient", path: "Sources/Client/ExosphereClient"),
        // Benchmark of the Postgres module against pgbench (bench/postgres.sh).
        .executableTarget(name: "exosphere-dbbench", dependencies: ["Postgres", "PostgresCluster"], path: "Sources/Executables/exosphere-dbbench"),

        // Test targets list every module their files import: nothing reaches them transitively.
        .testTarget(name: "HTTPTests", dependencies: ["CivilTime", "HTTP", "TestSupport"]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "HTTP", "Files", "LoopInterface", "SocketClient", "StructuredLogging", "TestSupport"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestSupport"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "PostgresCluster", "TestSupport"]),
        .testTarget(name: "MailTests", dependencies: ["Mail", "Files", "TestSupport"]),
        .testTarget(name: "OutboxTests", dependencies: ["Outbox", "Files", "TestSupport"]),
        .testTarget(name: "CryptographyTests", dependencies: ["Cryptography", "COpenSSL", "Threads", "TestSupport"]),
        .testTarget(name: "IdentityTokensTests", dependencies: ["IdentityTokens", "Cryptography", "JSON", "TestSupport"]),
        // CBOR and both WebAuthn ceremonies with a software authenticator (keys from the openssl command).
        .testTarget(name: "WebAuthnTests", dependencies: ["WebAuthn", "Cryptography", "TestSupport"]),
        // RFC 6238's vectors, codes computed by Python's hmac, and QR codes read back by zbarimg.
        .testTarget(name: "OneTimePasswordsTests", dependencies: ["OneTimePasswords", "Cryptography", "TestSupport"]),
        // The signer against AWS's published examples (the SigV4 test suite, the S3 documentation).
        .testTarget(name: "AWSSignatureTests", dependencies: ["AWSSignature", "Cryptography", "TestSupport"]),
        // The S3 client against a real one-node Ceph cluster the tests start (TestCeph), and boto3.
        .testTarget(
            name: "ObjectStorageTests", dependencies: ["ObjectStorage", "AWSSignature", "Cryptography", "Outbound", "Threads", "TestSupport"]),
        // The one-shot GET's answers read from bytes, and its URLs.
        .testTarget(name: "OutboundTests", dependencies: ["Outbound", "TestSupport"]),
        // What several test targets share: image builders, embedded real images, a seeded generator,
        // a real SMTP server (aiosmtpd), a throwaway certificate authority, and a one-node Ceph cluster.
        .target(
            name: "TestSupport", dependencies: ["Cryptography", "Files"], path: "Tests/TestSupport",
            exclude: ["smtp_server.py", "key_server.py", "ceph_cluster.sh", "s3_tool.py"]),
        // The account rules against a real PostgreSQL, without HTTP.
        .testTarget(
            name: "AccountsTests",
            dependencies: ["Accounts", "Cryptography", "JSON", "Migrations", "Postgres", "PostgresCluster", "StructuredLogging", "TestSupport"]),
        .testTarget(name: "ImagesTests", dependencies: ["Images", "Thumbnails", "Zip", "TestSupport"]),
        // BlurHash, the frames, and the helper pool against real `exosphere thumbnailer` processes.
        .testTarget(name: "ThumbnailsTests", dependencies: ["Thumbnails", "StructuredLogging", "TestSupport", "Files"]),
        .testTarget(
            name: "APITests",
            dependencies: [
                "API", "Accounts", "AWSSignature", "Cryptography", "Files", "HTTP", "HTTPServer", "Images", "JSON", "Mail",
                "Migrations", "ObjectStorage", "Postgres", "PostgresCluster", "SocketClient", "StructuredLogging", "TestSupport", "Thumbnails",
                "IdentityTokens", "Threads", "Time", "Lifecycle",
            ]),
        // The command line: parsing, usage, the health check.
        .testTarget(
            name: "CommandLineTests",
            dependencies: [
                "exosphere", "API", "HTTP", "HTTPServer", "Mail", "Outbox", "PostgresCluster", "SocketClient", "StructuredLogging",
                "TestSupport",
            ]),
        // The client against a real server started in-process on a throwaway PostgreSQL.
        .testTarget(
            name: "ExosphereClientTests",
            dependencies: ["ExosphereClient", "API", "Cryptography", "Postgres", "PostgresCluster", "StructuredLogging", "TestSupport", "Time"]),
    ],
    swiftLanguageModes: [.v6]
)
