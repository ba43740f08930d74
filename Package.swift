// swift-tools-version:6.0
//
// The entitlement engine: App Store signed data in, verified immutable events
// in SQLite, pure reducers out. No Swift package dependencies: the only native
// libraries are the system's SQLite and OpenSSL 3 (libcrypto, and libssl for
// the App Store Server API client).
import PackageDescription

let package = Package(
    name: "entitlements",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Entitlements", targets: ["Entitlements"]),
        .library(name: "EntitlementsServer", targets: ["EntitlementsServer"]),
        .executable(name: "entitlements", targets: ["EntitlementsCLI"]),
    ],
    targets: [
        // System libraries, reached through module maps and pkg-config.
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // libssl (same package as libcrypto): TLS for the App Store Server API client.
        .systemLibrary(
            name: "CLibSSL", pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),

        // bytes -> verification -> verified event -> log append -> reducer -> projection -> query
        // The system calls the adapters make (sockets, reads and writes), spelled once for Linux and macOS.
        .target(name: "SystemCalls"),
        // Pure JSON (parser, value, writer) and base64: what the core, the API client and the test PKI read and write.
        .target(name: "JSONAndBase64"),
        // The pure core: payload models, events, rules, state, reducers. No I/O, no clock.
        .target(
            name: "EntitlementCore", dependencies: ["JSONAndBase64"],
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]),
        // Verification adapter: JWS, X.509 chain, Apple OIDs, ES256 on OpenSSL.
        .target(name: "AppStoreVerification", dependencies: ["EntitlementCore", "COpenSSL"]),
        // The SQL schema, applied in order (Migrations/sql/NNN_name.sql), compiled in as
        // Swift literals by scripts/embed-resources.sh (no resource bundle at run time).
        .target(
            name: "SchemaMigrations", path: "Migrations",
            exclude: ["README.md", "sql"],
            sources: ["SchemaMigrations.swift", "Embedded"]),
        // App Store Server API adapter: the In-App Purchase key (.p8), ES256 signing of
        // tokens and offers, and the API client over HTTPS (libssl).
        .target(name: "AppStoreServerAPI", dependencies: ["JSONAndBase64", "COpenSSL", "CLibSSL", "SystemCalls"]),
        // Event store adapter: SQLite connection, migrator, log, quarantine, projections.
        .target(name: "EventStore", dependencies: ["EntitlementCore", "CSQLite", "SchemaMigrations"]),
        // The library facade that server apps depend on: ingest / query / replay / audit.
        // It links no HTTP server, and keeps the event store an internal import.
        .target(
            name: "Entitlements", dependencies: ["EntitlementCore", "AppStoreVerification", "EventStore", "AppStoreServerAPI", "SystemCalls"]),
        // HTTP/1.1 on POSIX sockets for `serve`: a pure request parser and a thin socket loop.
        .target(name: "HTTPServer", dependencies: ["SystemCalls"]),
        // `entitlements serve` as a library: the routes, the token checks and the webhook, on HTTPServer.
        // The dashboard's page (Dashboard/page) is compiled in as Swift literals by scripts/embed-resources.sh.
        .target(name: "EntitlementsServer", dependencies: ["Entitlements", "HTTPServer"], exclude: ["Dashboard/page"]),
        // Signed sample histories compiled into the program for `entitlements demo`
        // (Fixtures/demo and Fixtures/real, as Swift literals by scripts/embed-resources.sh).
        .target(
            name: "DemoFixtures", path: "Fixtures",
            exclude: ["README.md", "pki", "demo", "real", "legacy", "receipts"],
            sources: ["DemoFixtures.swift", "Embedded"]),
        // The command line: thin.
        .executableTarget(name: "EntitlementsCLI", dependencies: ["Entitlements", "EntitlementsServer", "DemoFixtures"]),

        // A throwaway PKI shaped like Apple's, for tests, the benchmark and the fixture maker.
        .target(name: "TestPKI", dependencies: ["COpenSSL", "JSONAndBase64"]),
        .executableTarget(
            name: "entitlements-bench",
            dependencies: ["Entitlements", "EntitlementsServer", "EventStore", "HTTPServer", "TestPKI", "COpenSSL", "DemoFixtures", "SystemCalls"]),
        .executableTarget(name: "entitlements-fixtures", dependencies: ["TestPKI", "EntitlementCore"]),
        // The README's embedding example: `import Entitlements` alone, async API, Encodable answers (run by the tests).
        .executableTarget(name: "entitlements-example", dependencies: ["Entitlements"]),

        // What the test targets share: the signing PKI and configurations (Scenario, E2E), scratch
        // workspaces, the `entitlements` binary and a runner for it, generated histories, the hostile
        // corpus, a loopback HTTP client, SplitMix64. Tests only: no product depends on it.
        .target(
            name: "TestSupport", dependencies: ["EntitlementCore", "Entitlements", "EventStore", "JSONAndBase64", "SystemCalls", "TestPKI"],
            path: "Tests/TestSupport"),

        // One test target per target; each declares exactly the modules it imports.
        .testTarget(name: "EntitlementCoreTests", dependencies: ["EntitlementCore", "TestSupport"]),
        .testTarget(name: "AppStoreVerificationTests", dependencies: ["AppStoreVerification", "EntitlementCore", "TestPKI", "COpenSSL", "TestSupport"]),
        .testTarget(name: "EventStoreTests", dependencies: ["EventStore", "EntitlementCore", "SchemaMigrations", "TestSupport", "CSQLite"]),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: ["AppStoreServerAPI", "Entitlements", "EntitlementCore", "EventStore", "TestPKI", "COpenSSL", "CLibSSL", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"]),
        // The library: ingest, query, identity, verification parts, as server apps call it.
        .testTarget(
            name: "EntitlementsTests",
            dependencies: ["Entitlements", "EntitlementCore", "AppStoreVerification", "EventStore", "SchemaMigrations", "TestPKI", "TestSupport"]),
        // `serve`'s routes, limits and load, on a real engine and a loopback socket.
        .testTarget(
            name: "EntitlementsServerTests",
            dependencies: ["EntitlementsServer", "Entitlements", "EntitlementCore", "EventStore", "HTTPServer", "TestPKI", "TestSupport"]),
        // The command line end to end: runs the built `entitlements` binary (`swift test` builds it).
        .testTarget(
            name: "EntitlementsCLITests",
            dependencies: ["Entitlements", "EntitlementCore", "AppStoreVerification", "EventStore", "DemoFixtures", "TestPKI", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
