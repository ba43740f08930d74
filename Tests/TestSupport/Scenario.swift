import EntitlementCore
import Foundation
import Testing
import TestPKI

/// What the engine's tests share: one signing PKI, the package's folder, the
/// demo configuration's rules, seeds, scratch folders.
package enum Scenario {
    /// The PKI the tests sign with; its root is the trust anchor their configurations name.
    /// One for the whole run (key generation is the slow part).
    package static let pki = TestPKI()

    /// Another PKI: what it signs does not chain to ``pki``'s root.
    package static let unrelatedPKI = TestPKI()

    /// The package root, from this file's path (Tests/TestSupport/Scenario.swift).
    package static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The products of the demo configuration (specification section 4).
    package static let productsJSON: JSONValue = [
        "com.example.pro.monthly": ["entitlements": ["pro"]],
        "com.example.pro.yearly": ["entitlements": ["pro"]],
        "com.example.lifetime": ["entitlements": ["pro"]],
        "com.example.pass.week": ["entitlements": ["pro"], "durationDays": 7],
        "com.example.coins.100": ["currency": "coins", "units": 100],
    ]

    /// The rules of the demo configuration, under `version`: grace periods grant access, billing retry does not.
    package static func rulesJSON(version: String) -> JSONValue {
        ["version": .string(version), "gracePeriodGrantsAccess": true, "billingRetryGrantsAccess": false, "products": productsJSON]
    }

    /// The rules of the demo configuration, as its file has them.
    package static let rulesJSON: JSONValue = rulesJSON(version: "2026-11-01")

    /// ``rulesJSON(version:)`` as ``Rules``.
    package static func rules(version: String) -> Rules {
        do { return try Rules(json: rulesJSON(version: version)) } catch { fatalError("the demo rules do not parse: \(error)") }
    }

    /// A configuration document trusting `root` (a path, relative to the file's folder).
    package static func configJSON(
        environment: String = "Sandbox", root: String = "root.pem", rules: JSONValue = rulesJSON, maxInputBytes: Int? = nil,
        busyTimeoutMilliseconds: Int? = nil
    ) -> JSONValue {
        var object = JSONObject([
            ("bundleId", .string(TestPayloads.bundleId)),
            ("appAppleId", .int(TestPayloads.appAppleId)),
            ("environment", .string(environment)),
            ("rootCertificates", [.string(root)]),
            ("rules", rules),
        ])
        if let maxInputBytes { object["maxInputBytes"] = .int(Int64(maxInputBytes)) }
        if let busyTimeoutMilliseconds { object["busyTimeoutMilliseconds"] = .int(Int64(busyTimeoutMilliseconds)) }
        return .object(object)
    }

    /// A new empty folder named `label-<random>` in this test process's scratch folder,
    /// which is removed when the process exits.
    package static func temporaryFolder(_ label: String) -> URL {
        let url = scratchRoot.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The folder every scratch folder of this test process goes in (`et-<pid>` under the
    /// temporary directory), removed with all it holds when the process exits.
    private static let scratchRoot: URL = {
        let url = scratchRootURL()
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Scenario.scratchRootURL()) }
        return url
    }()

    private static func scratchRootURL() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("et-\(getpid())")
    }

    /// A seed from the environment (`RELIABILITY_SEED`) or the given default, so a failure can be replayed.
    package static func seed(_ fallback: UInt64) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["RELIABILITY_SEED"], let value = UInt64(text) { return value }
        return fallback
    }

    /// Fails the current test with `message`.
    package static func fail(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}
