// swift-tools-version:6.1
//
// The CrashShield collector: a small self-hosted service that speaks the Sentry ingestion protocol,
// groups crashes and prevented crashes, and serves the remote switches (SDK configuration).
//
// A separate package so that an app depending on the SDK resolves no server dependency.
//   CollectorApp       the application: storage, ingest, grouping, HTTP routes (`buildApplication`)
//   CollectorCommandLine the commands and their options (`serve`, `prune`, `bench`), a library so the
//                      tests parse the same options into the same configuration
//   shield-collector   the executable (`shield-collector serve ...`)
import PackageDescription

let package = Package(
    name: "Collector",
    // A server: Linux in production; on a Mac, macOS 15 for Synchronization's Mutex and Atomic
    // (scripts/swift_availability_scan.py checks every use against this line).
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "shield-collector", targets: ["shield-collector"]),
        .library(name: "CollectorApp", targets: ["CollectorApp"]),
    ],
    dependencies: [
        .package(name: "CrashShield", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // zlib (gzip/deflate request bodies) and OpenSSL's libcrypto (SHA-256, Ed25519 signatures)
        // from the system: Debian's zlib1g-dev and libssl-dev. Both are far quicker to build against
        // than swift-crypto's bundled BoringSSL.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // SQLite (Debian: libsqlite3-dev), called directly: a statement takes microseconds, so it runs
        // on the calling thread instead of hopping to a thread pool (which cost more than the work).
        .systemLibrary(name: "CSQLite3", path: "Sources/CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // PostgreSQL's client library (Debian: libpq-dev), called on one dedicated thread per connection.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .target(
            name: "CollectorApp",
            dependencies: [
                "CZlib", "COpenSSL", "CLibPQ", "CSQLite3",
                .product(name: "CrashShieldProtocol", package: "CrashShield"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "CollectorCommandLine",
            dependencies: [
                "CollectorApp",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "shield-collector",
            dependencies: ["CollectorCommandLine", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "CollectorTests",
            dependencies: [
                "CollectorApp", "CollectorCommandLine", "CZlib", "CLibPQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CrashShieldProtocol", package: "CrashShield"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // Crash events read by the tests from the source tree (scripts/verdict_fixtures.py).
            exclude: ["Fixtures"]
        ),
    ]
)
