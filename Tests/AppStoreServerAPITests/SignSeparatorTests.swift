import EntitlementCore
import Foundation
import Testing

/// `sign` refuses U+2063, the separator of the V1 signature's fields, inside any field it
/// signs: otherwise product "a⁣b" with offer "c" and product "a" with offer "b⁣c" would sign
/// the same text.
@Suite struct SignSeparatorTests {
    static let separator = "\u{2063}"

    @Test func aFieldHoldingTheSeparatorIsAUsageErrorNamingIt() throws {
        let folder = Tool.folder("sign-separator")
        _ = try Tool.generateKey("SubscriptionKey_2X9R4HXF34.p8", in: folder)
        let config = try Tool.writeConfig(in: folder, keyPath: "SubscriptionKey_2X9R4HXF34.p8")
        let s = Self.separator
        let v1 = ["sign", "--config", config, "promotional-offer-v1", "--timestamp", "1698148900000"]
        let cases: [(arguments: [String], field: String)] = [
            (v1 + ["--product", "a\(s)b", "--offer", "c", "--app-account-token", "u"], "--product"),
            (v1 + ["--product", "a", "--offer", "b\(s)c", "--app-account-token", "u"], "--offer"),
            (v1 + ["--product", "a", "--offer", "c", "--app-account-token", "u\(s)"], "--app-account-token"),
            (["sign", "--config", config, "promotional-offer", "--product", "p\(s)", "--offer", "o"], "--product"),
            (["sign", "--config", config, "promotional-offer", "--product", "p", "--offer", "o", "--transaction-id", "1\(s)2"], "--transaction-id"),
            (["sign", "--config", config, "intro-offer-eligibility", "--product", "\(s)p", "--allow", "true", "--transaction-id", "1"], "--product"),
        ]
        for (arguments, field) in cases {
            let run = try Tool.entitlements(arguments, in: folder)
            #expect(run.status == 2, "\(field): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(field): nothing signed")
            #expect(run.stderr.contains(field) && run.stderr.contains("U+2063"), "\(run.stderr)")
        }

        // Without the separator, the same forms sign.
        let plain = try Tool.entitlements(v1 + ["--product", "a", "--offer", "b", "--app-account-token", "u"], in: folder)
        #expect(plain.status == 0, "\(plain.stderr)")
    }

    @Test func aConfiguredFieldHoldingTheSeparatorIsRefused() throws {
        let folder = Tool.folder("sign-separator-config")
        _ = try Tool.generateKey("key.p8", in: folder)
        let config = try Tool.writeConfig(in: folder, keyPath: "key.p8", bundleId: "com.example\(Self.separator).app")
        let run = try Tool.entitlements(
            ["sign", "--config", config, "promotional-offer-v1", "--product", "a", "--offer", "b", "--app-account-token", "u"], in: folder)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("bundleId") && run.stderr.contains("U+2063"), "\(run.stderr)")
    }
}
