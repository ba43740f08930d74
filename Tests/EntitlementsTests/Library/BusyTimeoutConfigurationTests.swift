import EntitlementCore
import Entitlements
import Foundation
import Testing

/// How long a write waits for another writer's lock before counting the attempt as busy:
/// ten seconds unless the configuration says otherwise (`busyTimeoutMilliseconds`).
@Suite struct BusyTimeoutConfigurationTests {
    static func document(_ extra: [(String, JSONValue)] = []) -> JSONValue {
        .object(JSONObject([("bundleId", "com.example.app"), ("environment", "Sandbox"), ("rules", ["version": "1", "products": [:]])] + extra))
    }

    static func load(_ document: JSONValue) throws(ConfigurationError) -> EngineConfiguration {
        try EngineConfiguration(json: document, baseDirectory: URL(fileURLWithPath: "/"))
    }

    @Test func theDefaultIsTenSeconds() throws {
        #expect(EngineConfiguration.defaultBusyTimeoutMilliseconds == 10_000)
        #expect(try Self.load(Self.document()).busyTimeoutMilliseconds == 10_000)
        let built = EngineConfiguration(bundleId: "com.example.app", environment: .sandbox, rules: try Rules(json: ["version": "1", "products": [:]]))
        #expect(built.busyTimeoutMilliseconds == 10_000)
    }

    @Test(arguments: [1, 250, 600_000])
    func theFileSetsIt(milliseconds: Int) throws {
        #expect(try Self.load(Self.document([("busyTimeoutMilliseconds", .int(Int64(milliseconds)))])).busyTimeoutMilliseconds == milliseconds)
    }

    @Test(arguments: [JSONValue.int(0), .int(-5), .int(600_001), .string("200"), .null])
    func outOfRangeIsNamed(value: JSONValue) {
        do {
            _ = try Self.load(Self.document([("busyTimeoutMilliseconds", value)]))
            Issue.record("busyTimeoutMilliseconds \(JSONWriter.string(value)) was accepted")
        } catch {
            #expect(error.field == "busyTimeoutMilliseconds", "\(error)")
        }
    }
}
