import EntitlementCore
import Entitlements
import Foundation
import Testing

/// `bundleId` is the app's bundle identifier, letters, digits, hyphens and periods: one
/// with a space or a control character (a copy-and-paste slip) is named as the mistake it
/// is, rather than rejecting every input INVALID_APP_IDENTIFIER and binding a new database
/// to the slip.
@Suite struct BundleIdConfigurationTests {
    static func document(bundleId: JSONValue) -> JSONValue {
        .object(JSONObject([("bundleId", bundleId), ("environment", "Sandbox"), ("rules", ["version": "1", "products": [:]])]))
    }

    static func load(_ document: JSONValue) throws(ConfigurationError) -> EngineConfiguration {
        try EngineConfiguration(json: document, baseDirectory: URL(fileURLWithPath: "/"))
    }

    @Test(arguments: ["com.example.app", "com.example.my-app", "com.example.my_app", "ABC123.com.example"])
    func aBundleIdentifierIsTaken(bundleId: String) throws {
        #expect(try Self.load(Self.document(bundleId: .string(bundleId))).bundleId == bundleId)
    }

    @Test(arguments: ["com.example.app ", " com.example.app", "com.example .app", "com.example.app\n", "com.example.app\t", "com.example.app\u{00A0}"])
    func whitespaceIsNamed(bundleId: String) {
        do {
            _ = try Self.load(Self.document(bundleId: .string(bundleId)))
            Issue.record("bundleId \(JSONWriter.string(.string(bundleId))) was accepted")
        } catch {
            #expect(error.field == "bundleId", "\(error)")
            #expect(error.description.contains("whitespace or control characters"), "\(error)")
        }
    }
}
