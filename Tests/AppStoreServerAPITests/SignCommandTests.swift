import EntitlementCore
import Foundation
import Testing

/// `entitlements sign`, run as a program.
@Suite struct SignCommandTests {
    let folder = Tool.folder("sign-cli")

    @Test func everyFormPrintsWhatVerifies() throws {
        let key = try Tool.generateKey("SubscriptionKey_2X9R4HXF34.p8", in: folder)
        let config = try Tool.writeConfig(in: folder, keyPath: "SubscriptionKey_2X9R4HXF34.p8")
        let before = Int64(Date().timeIntervalSince1970)

        let token = try Tool.entitlements(["sign", "--config", config, "api-token"], in: folder)
        #expect(token.status == 0, "\(token.stderr)")
        let decoded = try #require(try Tool.verifiedJWS(token.stdout.trimmingCharacters(in: .newlines), keyPath: key))
        #expect(decoded.header == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        let claims = try JSONParser().parse(decoded.payload)
        guard case .int(let iat)? = claims["iat"], case .int(let exp)? = claims["exp"] else {
            Issue.record("iat and exp are integers: \(decoded.payload)")
            return
        }
        #expect(iat >= before && iat <= before + 60)
        #expect(exp == iat + 300)
        #expect(claims["aud"] == "appstoreconnect-v1")
        #expect(claims["bid"] == "com.example.app")
        #expect(claims["iss"] == "57246542-96fe-1a63-e053-0824d011072a")

        let offer = try Tool.entitlements(
            ["sign", "promotional-offer", "--config", config, "--product", "com.example.pro.monthly", "--offer", "WINBACK50"], in: folder)
        #expect(offer.status == 0, "\(offer.stderr)")
        let offerClaims = try JSONParser().parse(
            try #require(try Tool.verifiedJWS(offer.stdout.trimmingCharacters(in: .newlines), keyPath: key)).payload)
        #expect(offerClaims["aud"] == "promotional-offer")
        #expect(offerClaims["transactionId"] == nil)
        #expect(offerClaims["exp"] == nil)
        guard case .string(let nonce)? = offerClaims["nonce"] else {
            Issue.record("nonce is a string")
            return
        }
        #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())

        let intro = try Tool.entitlements(
            ["sign", "--config", config, "intro-offer-eligibility", "--product", "p", "--allow", "false", "--transaction-id", "42"], in: folder)
        #expect(intro.status == 0, "\(intro.stderr)")
        let introClaims = try JSONParser().parse(
            try #require(try Tool.verifiedJWS(intro.stdout.trimmingCharacters(in: .newlines), keyPath: key)).payload)
        #expect(introClaims["allowIntroductoryOffer"] == .bool(false))
        #expect(introClaims["transactionId"] == "42")
        #expect(introClaims["aud"] == "introductory-offer-eligibility")

        let v1 = try Tool.entitlements(
            ["sign", "--config", config, "promotional-offer-v1", "--product", "p", "--offer", "o", "--app-account-token", "ABC",
             "--timestamp", "1698148900000"], in: folder)
        #expect(v1.status == 0, "\(v1.stderr)")
        let line = try JSONParser().parse(v1.stdout)
        #expect(line["keyId"] == "2X9R4HXF34")
        #expect(line["timestamp"] == .int(1_698_148_900_000))
        guard case .string(let v1Nonce)? = line["nonce"], case .string(let signature)? = line["signature"],
            let der = Data(base64Encoded: signature)
        else {
            Issue.record("nonce and a base64 signature: \(v1.stdout)")
            return
        }
        let message = ["com.example.app", "2X9R4HXF34", "p", "o", "abc", v1Nonce, "1698148900000"].joined(separator: "\u{2063}")
        #expect(try Tool.opensslVerifies(message: Array(message.utf8), derSignature: Array(der), keyPath: key))
    }

    @Test func keyAndUsageErrorsExitTwo() throws {
        let config = try Tool.writeConfig(in: folder, keyPath: "missing.p8")
        let missing = try Tool.entitlements(["sign", "--config", config, "api-token"], in: folder)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("KEY_NOT_FOUND"))
        #expect(missing.stdout.isEmpty)

        _ = try Tool.generateKey("missing.p8", in: folder)
        for arguments in [
            ["sign", "--config", config],
            ["sign", "--config", config, "promotional-offer", "--product", "p"],
            ["sign", "--config", config, "intro-offer-eligibility", "--product", "p", "--allow", "maybe", "--transaction-id", "1"],
            ["sign", "--config", config, "api-token", "--product", "p"],
            ["sign", "--config", config, "promotional-offer-v1", "--product", "p", "--offer", "o", "--app-account-token", "u", "--nonce", "x"],
            ["sign", "--config", config, "promotional-offer-v1", "--product", "p", "--offer", "o", "--app-account-token", "u", "--timestamp", "1698148900"],
        ] {
            let run = try Tool.entitlements(arguments, in: folder)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }

        let noSection = folder.appendingPathComponent("plain.json")
        try Data(#"{"bundleId":"com.example.app","environment":"Sandbox","rules":{"version":"1","products":{}}}"#.utf8).write(to: noSection)
        let unconfigured = try Tool.entitlements(["sign", "--config", noSection.path, "api-token"], in: folder)
        #expect(unconfigured.status == 2)
        #expect(unconfigured.stderr.contains("appStoreServerAPI"))
    }
}
