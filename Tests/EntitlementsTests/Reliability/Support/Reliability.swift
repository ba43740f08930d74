import EntitlementCore
import Foundation
import Testing
import TestPKI

/// Issue 7: the engine attacked the way production will attack it — killed,
/// raced, fed garbage, tampered with — and nothing lost.
///
/// Every reliability suite nests in this one, so `swift test --filter Reliability`
/// runs them all, one test at a time (they start processes and share two cores).
@Suite(.serialized)
enum Reliability {
    /// The PKI every reliability test signs with; its root is the configured trust anchor.
    static let pki = TestPKI()

    /// The package root, from this file's path (Tests/EntitlementsTests/Reliability/Support/Reliability.swift).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The rules of the demo configuration (contract section 4).
    static let rulesJSON: JSONValue = [
        "version": "2026-11-01",
        "gracePeriodGrantsAccess": true,
        "billingRetryGrantsAccess": false,
        "products": [
            "com.example.pro.monthly": ["entitlements": ["pro"]],
            "com.example.pro.yearly": ["entitlements": ["pro"]],
            "com.example.lifetime": ["entitlements": ["pro"]],
            "com.example.pass.week": ["entitlements": ["pro"], "durationDays": 7],
            "com.example.coins.100": ["currency": "coins", "units": 100],
        ],
    ]

    /// Fails the current test with `message` and returns `nil` (for `guard ... else`).
    static func fail(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}

extension Reliability {
    /// SplitMix64 (TestPKI's ``SeededRandom``): every randomized test repeats exactly from its seed.
    typealias RNG = SeededRandom

    /// A seed from the environment (`RELIABILITY_SEED`) or the given default, printed so a failure can be replayed.
    static func seed(_ fallback: UInt64) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["RELIABILITY_SEED"], let value = UInt64(text) { return value }
        return fallback
    }
}
