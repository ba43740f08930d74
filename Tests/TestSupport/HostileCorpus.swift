import EntitlementCore
import Foundation
import TestPKI

/// One malformed, forged or hostile input, and exactly what the engine must say about it.
package struct CorpusCase {
    /// A short, unique, file-name-safe name.
    package var name: String
    /// What it attacks, for people.
    package var note: String
    /// The input bytes, exactly as handed to the engine (one document).
    package var input: [UInt8]
    /// The error code of each item, in order (most inputs are one item).
    package var expected: [String]
    /// The configured environment it must be checked under.
    package var environment: String = "Sandbox"
    /// How many quarantine rows it adds when it arrives after the cases before it: one per
    /// rejected item, unless the same bytes were quarantined already (quarantine keeps each
    /// distinct input once).
    package var newQuarantineRows: Int? = nil

    /// Blank input: a stream reader skips it (there is no document); the library rejects it.
    package var isBlank: Bool { input.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A } }
    /// Too large to keep in the repository (generated at test time only).
    package var isHuge: Bool { input.count > 1 << 20 }
}

/// The named corpus of hostile inputs, built in code so that it is reproducible:
/// the verification issue's list (empty input, truncation, invalid base64 and UTF-8, 5 MB
/// lines, deep nesting, alg none or HS256, 2 or 4 certificates, an unrelated root,
/// certificates without Apple's OIDs, expired or not-yet-valid certificates at signedDate,
/// another bundle, app or environment, a valid notification whose nested transaction was
/// tampered with), plus duplicate keys, numbers out of range, dates in seconds, negative
/// quantities, wrong types for every field the reducers read, and inputs over the
/// configured `maxInputBytes`.
package enum HostileCorpus {
    /// The `maxInputBytes` the corpus is checked under.
    package static let maxInputBytes = 65_536
    package static let bundleId = TestPayloads.bundleId
    package static let day: Int64 = 86_400_000
    package static let t0 = TestPayloads.january2025

    // swiftlint:disable:next function_body_length
    package static func build(pki: TestPKI) -> [CorpusCase] {
        var cases: [CorpusCase] = []
        func add(_ name: String, _ note: String, _ input: [UInt8], _ expected: [String], environment: String = "Sandbox") {
            precondition(!cases.contains { $0.name == name }, "duplicate corpus name \(name)")
            cases.append(CorpusCase(name: name, note: note, input: input, expected: expected, environment: environment))
        }
        func add(_ name: String, _ note: String, _ text: String, _ expected: [String], environment: String = "Sandbox") {
            add(name, note, Array(text.utf8), expected, environment: environment)
        }
        func b64(_ bytes: [UInt8]) -> String { Base64Encoding.url(bytes) }
        func b64(_ text: String) -> String { Base64Encoding.url(Array(text.utf8)) }
        /// A JWS over any header and payload bytes, signed by `signer`'s leaf.
        func jws(header: JSONValue, payload: [UInt8], signer: TestPKI = pki) -> String {
            let input = b64(JSONWriter.string(header)) + "." + b64(payload)
            return input + "." + b64(signer.signature(over: Array(input.utf8)))
        }
        func jws(headerText: String, payload: [UInt8], signer: TestPKI = pki) -> String {
            let input = b64(headerText) + "." + b64(payload)
            return input + "." + b64(signer.signature(over: Array(input.utf8)))
        }
        func transaction(_ id: String, extra: [(String, JSONValue)] = [], bundleId: String = bundleId, environment: String = "Sandbox",
                         productId: String = "com.example.lifetime", type: String = "Non-Consumable") -> JSONValue {
            TestPayloads.transaction(
                transactionId: id, productId: productId, type: type, expiresDate: nil, bundleId: bundleId,
                environment: environment, extra: extra)
        }
        func body(_ key: String, _ value: String) -> String { JSONWriter.string(.object(JSONObject([(key, .string(value))]))) }
        func transactionBody(_ jws: String) -> String { body("signedTransactionInfo", jws) }
        let goodTransaction = pki.sign(transaction("2000000000000901"))
        let goodParts = goodTransaction.split(separator: ".", omittingEmptySubsequences: false).map(String.init)

        // MARK: Not an input at all (MALFORMED_INPUT)
        add("empty", "an empty document", "", ["MALFORMED_INPUT"])
        add("whitespace", "only spaces and tabs", " \t  ", ["MALFORMED_INPUT"])
        add("garbage-text", "text that is neither JSON nor a JWS", "hello, is this the App Store?", ["MALFORMED_INPUT"])
        add("json-number", "a JSON number", "42", ["MALFORMED_INPUT"])
        add("json-array", "a JSON array", "[\"a\",\"b\"]", ["MALFORMED_INPUT"])
        add("json-null", "JSON null", "null", ["MALFORMED_INPUT"])
        add("json-object-unknown-keys", "an object with none of the known keys", "{\"foo\":\"bar\"}", ["MALFORMED_INPUT"])
        add("signed-payload-not-string", "signedPayload is a number", "{\"signedPayload\":12345}", ["MALFORMED_INPUT"])
        add("signed-payload-null", "signedPayload is null", "{\"signedPayload\":null}", ["MALFORMED_INPUT"])
        add("signed-payload-empty", "signedPayload is the empty string", "{\"signedPayload\":\"\"}", ["MALFORMED_INPUT"])
        // An item is quarantined as its JWS: an empty one is the same input as the empty document.
        cases[cases.count - 1].newQuarantineRows = 0
        add("signed-transactions-not-array", "signedTransactions is a string", "{\"signedTransactions\":\"abc\"}", ["MALFORMED_INPUT"])
        add("signed-transactions-element-number", "a history page holding a number", "{\"signedTransactions\":[\"\(goodTransaction)\",7]}", ["MALFORMED_INPUT"])
        add("statuses-data-not-array", "Get All Subscription Statuses with data an object", "{\"data\":{\"lastTransactions\":[]}}", ["MALFORMED_INPUT"])
        add("statuses-last-transactions-missing", "a status group without lastTransactions", "{\"data\":[{\"subscriptionGroupIdentifier\":\"1\"}]}", ["MALFORMED_INPUT"])
        add("truncated-body", "a notification body cut in half", String(TestPayloads.body(signedPayload: goodTransaction).prefix(900)), ["MALFORMED_INPUT"])
        add("trailing-garbage", "a valid body followed by more bytes", transactionBody(goodTransaction) + " {}", ["MALFORMED_INPUT"])
        add("two-documents-one-line", "two JSON documents on one line", transactionBody(goodTransaction) + transactionBody(goodTransaction), ["MALFORMED_INPUT"])
        add("duplicate-keys-body", "the same key twice in the body (which one would count?)",
            "{\"signedTransactionInfo\":\"\(goodTransaction)\",\"signedTransactionInfo\":\"x.y.z\"}", ["MALFORMED_INPUT"])
        add("invalid-utf8-body", "invalid UTF-8 inside a JSON string of the body",
            Array("{\"signedTransactionInfo\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8), ["MALFORMED_INPUT"])
        add("invalid-utf8-bare", "invalid UTF-8 where a bare JWS is expected", [0x65, 0x79, 0xFF, 0xFE, 0x2E, 0x61, 0x2E, 0x62], ["MALFORMED_INPUT"])
        add("overlong-utf8", "an overlong UTF-8 encoding of '/' in the body",
            Array("{\"signedTransactionInfo\":\"a".utf8) + [0xC0, 0xAF] + Array("\"}".utf8), ["MALFORMED_INPUT"])
        add("lone-surrogate-escape", "a lone UTF-16 surrogate escape in the body", "{\"signedTransactionInfo\":\"\\ud800\"}", ["MALFORMED_INPUT"])
        add("nul-byte", "a NUL byte in the middle of the body",
            Array("{\"signedTransactionInfo\":".utf8) + [0x00] + Array("\"a.b.c\"}".utf8), ["MALFORMED_INPUT"])
        add("deeply-nested-body", "10,000 nested arrays (a parser that recurses would overflow its stack)",
            String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), ["MALFORMED_INPUT"])
        add("deeply-nested-object-body", "10,000 nested objects",
            String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000), ["MALFORMED_INPUT"])
        add("over-max-input-bytes", "one byte over the configured maxInputBytes",
            transactionBody(goodTransaction) + String(repeating: " ", count: maxInputBytes + 1 - transactionBody(goodTransaction).utf8.count),
            ["MALFORMED_INPUT"])
        add("line-5mb", "a 5 MB line (bounded before it is read into memory)",
            "{\"signedPayload\":\"" + String(repeating: "A", count: 5 << 20) + "\"}", ["MALFORMED_INPUT"])

        // MARK: Not a compact JWS (MALFORMED_INPUT)
        add("jws-truncated", "a JWS cut inside its payload", transactionBody(String(goodTransaction.prefix(goodParts[0].count + 40))), ["MALFORMED_INPUT"])
        add("jws-two-segments", "header.payload with no signature segment", transactionBody(goodParts[0] + "." + goodParts[1]), ["MALFORMED_INPUT"])
        add("jws-four-segments", "four segments", transactionBody(goodTransaction + ".AAAA"), ["MALFORMED_INPUT"])
        add("jws-empty-payload", "an empty payload segment", transactionBody(goodParts[0] + ".." + goodParts[2]), ["MALFORMED_INPUT"])
        add("jws-header-not-base64", "the header segment is not base64url", transactionBody("e$J!." + goodParts[1] + "." + goodParts[2]), ["MALFORMED_INPUT"])
        add("jws-header-not-json", "the header is base64url of text", transactionBody(b64("not json") + "." + goodParts[1] + "." + goodParts[2]), ["MALFORMED_INPUT"])
        add("jws-header-deeply-nested", "a header of 10,000 nested arrays",
            transactionBody(b64(String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)) + "." + goodParts[1] + "." + goodParts[2]),
            ["MALFORMED_INPUT"])
        add("jws-header-duplicate-alg", "alg twice in the header",
            transactionBody(jws(headerText: "{\"alg\":\"ES256\",\"alg\":\"none\",\"x5c\":[]}", payload: Array(JSONWriter.string(transaction("2000000000000902")).utf8))),
            ["MALFORMED_INPUT"])
        let header = pki.header()
        add("payload-not-base64", "a correctly signed payload segment that is not base64url",
            transactionBody({ let input = b64(JSONWriter.string(header)) + ".*not*base64*"; return input + "." + b64(pki.signature(over: Array(input.utf8))) }()),
            ["MALFORMED_INPUT"])
        add("payload-padded-base64", "a correctly signed payload in padded base64 (not base64url)",
            transactionBody({ let input = b64(JSONWriter.string(header)) + "." + Base64Encoding.standard(Array(JSONWriter.string(transaction("2000000000000903")).utf8)) + "=="; return input + "." + b64(pki.signature(over: Array(input.utf8))) }()),
            ["MALFORMED_INPUT"])
        add("payload-not-json", "a correctly signed payload that is not JSON", transactionBody(jws(header: header, payload: Array("not json".utf8))), ["MALFORMED_INPUT"])
        add("payload-invalid-utf8", "a correctly signed payload with invalid UTF-8",
            transactionBody(jws(header: header, payload: Array("{\"transactionId\":\"".utf8) + [0xC3, 0x28] + Array("\",\"signedDate\":1735689600000}".utf8))),
            ["MALFORMED_INPUT"])
        add("payload-deeply-nested", "a correctly signed payload of 10,000 nested arrays",
            transactionBody(jws(header: header, payload: Array((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8))),
            ["MALFORMED_INPUT"])
        add("payload-array", "a correctly signed JSON array payload", transactionBody(jws(header: header, payload: Array("[1,2,3]".utf8))), ["MALFORMED_INPUT"])
        add("payload-duplicate-keys", "a correctly signed payload with productId twice",
            transactionBody(jws(header: header, payload: Array("{\"transactionId\":\"2000000000000904\",\"originalTransactionId\":\"2000000000000904\",\"bundleId\":\"com.example.app\",\"productId\":\"com.example.pro.monthly\",\"productId\":\"com.example.lifetime\",\"purchaseDate\":1735689600000,\"type\":\"Non-Consumable\",\"signedDate\":1735689600000,\"environment\":\"Sandbox\"}".utf8))),
            ["MALFORMED_INPUT"])
        add("payload-unclassifiable", "a correctly signed bare JWS that is none of the four kinds",
            jws(header: header, payload: Array("{\"signedDate\":1735689600000,\"bundleId\":\"com.example.app\"}".utf8)), ["MALFORMED_INPUT"])
        add("wrong-kind-renewal-as-transaction", "renewal info handed over as signedTransactionInfo",
            transactionBody(pki.sign(TestPayloads.renewalInfo())), ["MALFORMED_INPUT"])
        add("wrong-kind-transaction-as-notification", "a transaction handed over as signedPayload",
            TestPayloads.body(signedPayload: pki.sign(transaction("2000000000000905"))), ["MALFORMED_INPUT"])

        // MARK: Dates, numbers, ranges (MALFORMED_INPUT)
        add("signed-date-in-seconds", "signedDate in seconds, not milliseconds",
            transactionBody(pki.sign(transaction("2000000000000906", extra: [("signedDate", .int(1_735_689_600))]))), ["MALFORMED_INPUT"])
        add("purchase-date-in-seconds", "purchaseDate in seconds",
            transactionBody(pki.sign(transaction("2000000000000907", extra: [("purchaseDate", .int(1_735_689_600))]))), ["MALFORMED_INPUT"])
        add("expires-date-in-microseconds", "expiresDate in microseconds (year 56,000)",
            transactionBody(pki.sign(TestPayloads.transaction(transactionId: "2000000000000908", expiresDate: 1_738_281_600_000_000))), ["MALFORMED_INPUT"])
        add("revocation-date-in-seconds", "revocationDate in seconds: a refund dated 1970 would revoke at once",
            transactionBody(pki.sign(transaction("2000000000000909", extra: [("revocationDate", .int(1_735_700_000)), ("signedDate", .int(t0 + day))]))), ["MALFORMED_INPUT"])
        add("quantity-negative", "a negative quantity of consumables (would take coins away)",
            transactionBody(pki.sign(TestPayloads.transaction(transactionId: "2000000000000910", productId: "com.example.coins.100", type: "Consumable", expiresDate: nil, quantity: -5))), ["MALFORMED_INPUT"])
        add("quantity-zero", "a quantity of zero",
            transactionBody(pki.sign(TestPayloads.transaction(transactionId: "2000000000000911", productId: "com.example.coins.100", type: "Consumable", expiresDate: nil, quantity: 0))), ["MALFORMED_INPUT"])
        add("quantity-huge", "a quantity of 10^12 consumables",
            transactionBody(pki.sign(TestPayloads.transaction(transactionId: "2000000000000912", productId: "com.example.coins.100", type: "Consumable", expiresDate: nil, quantity: 1_000_000_000_000))), ["MALFORMED_INPUT"])
        add("quantity-beyond-int64", "a quantity beyond 64-bit integers",
            transactionBody(jws(header: header, payload: Array(JSONWriter.string(transaction("2000000000000913")).replacingOccurrences(of: "\"quantity\":1", with: "\"quantity\":99999999999999999999999").utf8))),
            ["MALFORMED_INPUT"])
        add("quantity-fraction", "a fractional quantity",
            transactionBody(pki.sign(transaction("2000000000000914", extra: [("quantity", .double(1.5))]))), ["MALFORMED_INPUT"])
        add("date-fraction", "a fractional signedDate",
            transactionBody(pki.sign(transaction("2000000000000915", extra: [("signedDate", .double(1_735_689_600_000.5))]))), ["MALFORMED_INPUT"])
        add("revocation-percentage-over-100", "revocationPercentage over 100000 (more than all of it)",
            transactionBody(pki.sign(transaction("2000000000000916", extra: [("revocationPercentage", .int(250_000)), ("revocationDate", .int(t0 + day)), ("revocationType", "REFUND_PRORATED")]))), ["MALFORMED_INPUT"])
        add("revocation-percentage-negative", "a negative revocationPercentage",
            transactionBody(pki.sign(transaction("2000000000000917", extra: [("revocationPercentage", .int(-1)), ("revocationDate", .int(t0 + day)), ("revocationType", "REFUND_PRORATED")]))), ["MALFORMED_INPUT"])
        add("auto-renew-status-2", "autoRenewStatus outside 0...1",
            body("signedRenewalInfo", pki.sign(TestPayloads.renewalInfo(autoRenewStatus: 2, signedDate: t0 + 7))), ["MALFORMED_INPUT"])
        add("transaction-id-empty", "an empty transactionId",
            transactionBody(pki.sign(transaction("", extra: [("originalTransactionId", "2000000000000918")]))), ["MALFORMED_INPUT"])

        // MARK: Wrong types for every field the reducers read (MALFORMED_INPUT)
        let transactionFields: [(String, JSONValue)] = [
            ("transactionId", 2000000000000001), ("originalTransactionId", 2000000000000001), ("productId", 7), ("type", 1),
            ("purchaseDate", "1735689600000"), ("expiresDate", "1738281600000"), ("signedDate", "1735689600000"),
            ("quantity", "1"), ("revocationDate", true), ("revocationType", 1), ("revocationPercentage", "50000"),
            ("isUpgraded", "true"), ("inAppOwnershipType", 0), ("appAccountToken", 12), ("appTransactionId", 704000000000000001),
            ("bundleId", ["com.example.app"]), ("environment", .object(JSONObject([("name", "Sandbox")]))),
            ("subscriptionGroupIdentifier", 21000001), ("refundPercentage", "50"), ("originalPurchaseDate", false),
        ]
        for (index, (field, value)) in transactionFields.enumerated() {
            add("transaction-\(field)-wrong-type", "transaction \(field) as a JSON \(value.typeName)",
                transactionBody(pki.sign(TestPayloads.transaction(transactionId: "20000000000010\(String(format: "%02d", index))", extra: [(field, value)]))),
                ["MALFORMED_INPUT"])
        }
        let renewalFields: [(String, JSONValue)] = [
            ("originalTransactionId", 2000000000000001), ("autoRenewProductId", 1), ("productId", false), ("autoRenewStatus", "1"),
            ("isInBillingRetryPeriod", "false"), ("gracePeriodExpiresDate", "1738281600000"), ("signedDate", .null),
            ("appAccountToken", .array([])), ("appTransactionId", 1), ("environment", 1), ("renewalDate", "soon"),
            ("eligibleWinBackOfferIds", "offer"),
        ]
        for (index, (field, value)) in renewalFields.enumerated() {
            add("renewal-\(field)-wrong-type", "renewal info \(field) as JSON \(value.typeName)",
                body("signedRenewalInfo", pki.sign(TestPayloads.renewalInfo(signedDate: t0 + 100 + Int64(index), extra: [(field, value)]))),
                ["MALFORMED_INPUT"])
        }
        let notificationFields: [(String, JSONValue)] = [
            ("notificationType", 1), ("subtype", 2), ("notificationUUID", 3), ("signedDate", "1735689600000"), ("data", "data"),
            ("summary", 5), ("appData", .array([])),
        ]
        for (field, value) in notificationFields {
            add("notification-\(field)-wrong-type", "notification \(field) as JSON \(value.typeName)",
                TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "DID_RENEW", signedTransactionInfo: goodTransaction, extra: [(field, value)]))),
                ["MALFORMED_INPUT"])
        }
        add("notification-data-bundle-wrong-type", "notification data.bundleId as a number",
            TestPayloads.body(signedPayload: pki.sign(.object(JSONObject([
                ("notificationType", "DID_RENEW"), ("notificationUUID", "00000000-0000-4000-8000-0000000000d1"), ("signedDate", .int(t0)),
                ("data", .object(JSONObject([("bundleId", 5), ("environment", "Sandbox"), ("signedTransactionInfo", .string(goodTransaction))]))),
            ])))), ["MALFORMED_INPUT"])
        add("notification-nested-transaction-not-string", "data.signedTransactionInfo as an object",
            TestPayloads.body(signedPayload: pki.sign(.object(JSONObject([
                ("notificationType", "DID_RENEW"), ("notificationUUID", "00000000-0000-4000-8000-0000000000d2"), ("signedDate", .int(t0)),
                ("data", .object(JSONObject([("bundleId", "com.example.app"), ("environment", "Sandbox"), ("signedTransactionInfo", .object(JSONObject([("transactionId", "1")])))]))),
            ])))), ["MALFORMED_INPUT"])
        let appFields: [(String, JSONValue)] = [
            ("receiptCreationDate", "1735689600000"), ("bundleId", 1), ("appTransactionId", 704000000000000001), ("receiptType", 1),
        ]
        for (field, value) in appFields {
            add("app-transaction-\(field)-wrong-type", "AppTransaction \(field) as JSON \(value.typeName)",
                body("signedAppTransactionInfo", pki.sign(TestPayloads.appTransaction(extra: [(field, value)]))), ["MALFORMED_INPUT"])
        }

        // MARK: The header: algorithm and chain shape
        func headerJSON(_ members: [(String, JSONValue)]) -> JSONValue { .object(JSONObject(members.map { (key: $0.0, value: $0.1) })) }
        let x5c = JSONValue.array(pki.x5c.map(JSONValue.string))
        let lifetime = Array(JSONWriter.string(transaction("2000000000000920")).utf8)
        add("alg-none", "alg none with an empty signature: the classic JWT bypass",
            transactionBody(b64(JSONWriter.string(headerJSON([("alg", "none"), ("x5c", x5c)]))) + "." + b64(lifetime) + "."), ["VERIFICATION_FAILURE"])
        add("alg-none-lowercase-signed", "alg 'none' with a real signature attached",
            transactionBody(jws(header: headerJSON([("alg", "none"), ("x5c", x5c)]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("alg-hs256", "alg HS256 with an HMAC-sized signature (key confusion)",
            transactionBody(b64(JSONWriter.string(headerJSON([("alg", "HS256"), ("x5c", x5c)]))) + "." + b64(lifetime) + "." + b64([UInt8](repeating: 0x5A, count: 32))),
            ["VERIFICATION_FAILURE"])
        add("alg-rs256", "alg RS256", transactionBody(jws(header: headerJSON([("alg", "RS256"), ("x5c", x5c)]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("alg-es384", "alg ES384", transactionBody(jws(header: headerJSON([("alg", "ES384"), ("x5c", x5c)]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("alg-missing", "no alg", transactionBody(jws(header: headerJSON([("x5c", x5c)]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("alg-number", "alg as a number", transactionBody(jws(header: headerJSON([("alg", 256), ("x5c", x5c)]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("crit-header", "a crit header extension",
            transactionBody(jws(header: headerJSON([("alg", "ES256"), ("x5c", x5c), ("crit", ["exp"])]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("x5c-missing", "no x5c: nothing to verify against", transactionBody(jws(header: headerJSON([("alg", "ES256")]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("x5c-string", "x5c as a single string", transactionBody(jws(header: headerJSON([("alg", "ES256"), ("x5c", .string(pki.x5c[0]))]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("x5c-jwk-instead", "a jwk header (embedded key) and no x5c",
            transactionBody(jws(header: headerJSON([("alg", "ES256"), ("jwk", .object(JSONObject([("kty", "EC"), ("crv", "P-256")])))]), payload: lifetime)), ["VERIFICATION_FAILURE"])
        add("x5c-zero-certificates", "x5c empty", transactionBody(jws(header: headerJSON([("alg", "ES256"), ("x5c", [])]), payload: lifetime)), ["INVALID_CHAIN_LENGTH"])
        add("x5c-one-certificate", "only the leaf", transactionBody(jws(header: pki.header(x5c: [pki.x5c[0]]), payload: lifetime)), ["INVALID_CHAIN_LENGTH"])
        add("x5c-two-certificates", "leaf and intermediate, no root", transactionBody(jws(header: pki.header(x5c: Array(pki.x5c.prefix(2))), payload: lifetime)), ["INVALID_CHAIN_LENGTH"])
        add("x5c-four-certificates", "the chain plus an extra certificate", transactionBody(jws(header: pki.header(x5c: pki.x5c + [pki.x5c[2]]), payload: lifetime)), ["INVALID_CHAIN_LENGTH"])
        add("x5c-entry-not-base64", "an x5c entry that is not base64",
            transactionBody(jws(header: pki.header(x5c: [pki.x5c[0], "%%%not base64%%%", pki.x5c[2]]), payload: lifetime)), ["INVALID_CERTIFICATE"])
        add("x5c-entry-not-der", "an x5c entry that is base64 of garbage",
            transactionBody(jws(header: pki.header(x5c: [pki.x5c[0], Base64Encoding.standard(Array(repeating: 0x30, count: 96)), pki.x5c[2]]), payload: lifetime)), ["INVALID_CERTIFICATE"])
        add("x5c-entry-number", "an x5c entry that is a number",
            transactionBody(jws(header: headerJSON([("alg", "ES256"), ("x5c", [.string(pki.x5c[0]), 1, .string(pki.x5c[2])])]), payload: lifetime)), ["INVALID_CERTIFICATE"])
        add("x5c-entry-base64url", "an x5c entry in base64url without padding (x5c is standard base64)",
            transactionBody(jws(header: pki.header(x5c: [Base64Encoding.url(pki.leafDER), pki.x5c[1], pki.x5c[2]]), payload: lifetime)), ["INVALID_CERTIFICATE"])

        // MARK: Signatures (VERIFICATION_FAILURE)
        let forged = b64(Array(JSONWriter.string(transaction("2000000000000901", productId: "com.example.lifetime")).replacingOccurrences(of: "\"quantity\":1", with: "\"quantity\":2").utf8))
        add("tampered-payload", "a genuine JWS whose payload was edited after signing",
            transactionBody(goodParts[0] + "." + forged + "." + goodParts[2]), ["VERIFICATION_FAILURE"])
        var flipped = Array(goodParts[2])
        flipped[10] = flipped[10] == "A" ? "B" : "A"
        add("tampered-signature", "one character of the signature changed", transactionBody(goodParts[0] + "." + goodParts[1] + "." + String(flipped)), ["VERIFICATION_FAILURE"])
        add("signature-empty", "an empty signature segment", transactionBody(goodParts[0] + "." + goodParts[1] + "."), ["VERIFICATION_FAILURE"])
        add("signature-der-encoded", "an ECDSA signature in DER instead of raw r||s",
            transactionBody(goodParts[0] + "." + goodParts[1] + "." + b64([0x30, 0x44, 0x02, 0x20] + Array(repeating: 0x11, count: 32) + [0x02, 0x20] + Array(repeating: 0x22, count: 32))),
            ["VERIFICATION_FAILURE"])
        add("signature-all-zero", "r = s = 0", transactionBody(goodParts[0] + "." + goodParts[1] + "." + b64([UInt8](repeating: 0, count: 64))), ["VERIFICATION_FAILURE"])
        add("signature-swapped-from-other-jws", "a signature copied from another genuine JWS",
            transactionBody(goodParts[0] + "." + goodParts[1] + "." + pki.sign(transaction("2000000000000921")).split(separator: ".")[2]), ["VERIFICATION_FAILURE"])
        let stranger = Scenario.unrelatedPKI
        add("signed-by-other-key", "the trusted chain in x5c, signed by a key that is not its leaf's",
            transactionBody(jws(header: header, payload: lifetime, signer: stranger)), ["VERIFICATION_FAILURE"])
        let p384 = TestPKI(TestPKI.Options(leafCurve: .p384), sharingRootWith: pki)
        add("leaf-p384", "a leaf with a P-384 key (ES256 needs P-256)",
            transactionBody(jws(header: p384.header(), payload: lifetime, signer: p384)), ["VERIFICATION_FAILURE"])

        // MARK: The chain (INVALID_CHAIN)
        add("unrelated-root", "a complete Apple-shaped chain under a root nobody configured",
            transactionBody(stranger.sign(transaction("2000000000000922"))), ["INVALID_CHAIN"])
        let mixed = TestPKI()
        add("chain-mixed-with-trusted-root", "an unrelated leaf and intermediate presented with the trusted root in x5c[2]",
            transactionBody(jws(header: mixed.header(x5c: [mixed.x5c[0], mixed.x5c[1], pki.x5c[2]]), payload: lifetime, signer: mixed)), ["INVALID_CHAIN"])
        let noLeafOID = TestPKI(.leafWithoutAppleOID, sharingRootWith: pki)
        add("leaf-without-oid", "a leaf without 1.2.840.113635.100.6.11.1", transactionBody(noLeafOID.sign(transaction("2000000000000923"))), ["INVALID_CHAIN"])
        let noIntermediateOID = TestPKI(.intermediateWithoutAppleOID, sharingRootWith: pki)
        add("intermediate-without-oid", "an intermediate without 1.2.840.113635.100.6.2.1",
            transactionBody(noIntermediateOID.sign(transaction("2000000000000924"))), ["INVALID_CHAIN"])
        let expired = TestPKI(.leafValid(Validity(notBefore: 1_420_070_400_000, notAfter: 1_577_836_800_000)), sharingRootWith: pki)
        add("leaf-expired-at-signed-date", "a leaf that expired in 2020, signing in 2025", transactionBody(expired.sign(transaction("2000000000000925"))), ["INVALID_CHAIN"])
        let notYet = TestPKI(.leafValid(Validity(notBefore: 1_893_456_000_000, notAfter: 2_366_841_600_000)), sharingRootWith: pki)
        add("leaf-not-yet-valid-at-signed-date", "a leaf valid from 2030, signing in 2025", transactionBody(notYet.sign(transaction("2000000000000926"))), ["INVALID_CHAIN"])
        let oldIntermediate = TestPKI(TestPKI.Options(intermediateValidity: Validity(notBefore: 1_420_070_400_000, notAfter: 1_577_836_800_000)), sharingRootWith: pki)
        add("intermediate-expired-at-signed-date", "an intermediate that expired in 2020",
            transactionBody(oldIntermediate.sign(transaction("2000000000000927"))), ["INVALID_CHAIN"])
        add("valid-chain-backdated-payload", "a chain valid 2030-2045 with a payload that claims 2025",
            transactionBody(notYet.sign(TestPayloads.transaction(transactionId: "2000000000000928", purchaseDate: t0, signedDate: t0))), ["INVALID_CHAIN"])

        // MARK: Another app or environment
        add("other-bundle-transaction", "a genuine transaction of another app",
            transactionBody(pki.sign(transaction("2000000000000930", bundleId: "com.attacker.app"))), ["INVALID_APP_IDENTIFIER"])
        add("other-bundle-notification", "a genuine notification of another app",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "TEST", uuid: "00000000-0000-4000-8000-0000000000b1", bundleId: "com.attacker.app"))),
            ["INVALID_APP_IDENTIFIER"])
        add("other-bundle-app-transaction", "a genuine AppTransaction of another app",
            body("signedAppTransactionInfo", pki.sign(TestPayloads.appTransaction(bundleId: "com.attacker.app"))), ["INVALID_APP_IDENTIFIER"])
        add("bundle-case-variant", "the bundle id in another letter case",
            transactionBody(pki.sign(transaction("2000000000000931", bundleId: "com.Example.app"))), ["INVALID_APP_IDENTIFIER"])
        add("production-data-in-sandbox", "a Production transaction fed to a Sandbox engine",
            transactionBody(pki.sign(transaction("2000000000000932", environment: "Production"))), ["INVALID_ENVIRONMENT"])
        add("xcode-data-in-sandbox", "an Xcode transaction fed to a Sandbox engine",
            transactionBody(pki.sign(transaction("2000000000000933", environment: "Xcode"))), ["INVALID_ENVIRONMENT"])
        add("production-notification-in-sandbox", "a notification whose data.environment is Production",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "TEST", uuid: "00000000-0000-4000-8000-0000000000b2", environment: "Production"))),
            ["INVALID_ENVIRONMENT"])
        add("production-app-transaction-in-sandbox", "an AppTransaction with receiptType Production",
            body("signedAppTransactionInfo", pki.sign(TestPayloads.appTransaction(receiptType: "Production"))), ["INVALID_ENVIRONMENT"])
        add("sandbox-data-in-production", "a Sandbox transaction fed to a Production engine",
            transactionBody(pki.sign(transaction("2000000000000934"))), ["INVALID_ENVIRONMENT"], environment: "Production")
        add("other-app-apple-id-in-production", "a Production notification for another appAppleId",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(
                type: "TEST", uuid: "00000000-0000-4000-8000-0000000000b3", appAppleId: 999_999, environment: "Production"))),
            ["INVALID_APP_IDENTIFIER"], environment: "Production")
        add("other-app-apple-id-app-transaction-in-production", "a Production AppTransaction for another appAppleId",
            body("signedAppTransactionInfo", pki.sign(TestPayloads.appTransaction(receiptType: "Production", appAppleId: 999_999))),
            ["INVALID_APP_IDENTIFIER"], environment: "Production")

        // MARK: Notifications whose nested JWS fail (the whole notification is rejected)
        let nestedForged = goodParts[0] + "." + forged + "." + goodParts[2]
        add("nested-transaction-tampered", "a genuine notification whose nested transaction was edited",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "ONE_TIME_CHARGE", uuid: "00000000-0000-4000-8000-0000000000c1", signedTransactionInfo: nestedForged))),
            ["VERIFICATION_FAILURE"])
        add("nested-transaction-other-bundle", "a genuine notification nesting another app's transaction",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "ONE_TIME_CHARGE", uuid: "00000000-0000-4000-8000-0000000000c2", signedTransactionInfo: pki.sign(transaction("2000000000000940", bundleId: "com.attacker.app"))))),
            ["INVALID_APP_IDENTIFIER"])
        add("nested-renewal-unrelated-root", "a genuine notification nesting renewal info from an unrelated root",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "DID_RENEW", uuid: "00000000-0000-4000-8000-0000000000c3", signedTransactionInfo: goodTransaction, signedRenewalInfo: stranger.sign(TestPayloads.renewalInfo(signedDate: t0 + 9))))),
            ["INVALID_CHAIN"])
        add("nested-transaction-not-jws", "a genuine notification whose nested transaction is not a JWS",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "DID_RENEW", uuid: "00000000-0000-4000-8000-0000000000c4", signedTransactionInfo: "not-a-jws"))),
            ["MALFORMED_INPUT"])
        add("nested-transaction-sandbox-env-production", "a genuine notification nesting a Production transaction",
            TestPayloads.body(signedPayload: pki.sign(TestPayloads.notification(type: "DID_RENEW", uuid: "00000000-0000-4000-8000-0000000000c5", signedTransactionInfo: pki.sign(transaction("2000000000000941", environment: "Production"))))),
            ["INVALID_ENVIRONMENT"])
        add("forged-notification-genuine-nested", "a forged outer notification (unrelated root) around a genuine transaction",
            TestPayloads.body(signedPayload: stranger.sign(TestPayloads.notification(type: "ONE_TIME_CHARGE", uuid: "00000000-0000-4000-8000-0000000000c6", signedTransactionInfo: goodTransaction))),
            ["INVALID_CHAIN"])

        // MARK: Several items in one document: each judged on its own
        add("history-page-all-forged", "a history page of three forged transactions",
            TestPayloads.body(signedTransactions: [
                goodParts[0] + "." + b64(JSONWriter.string(transaction("2000000000000953"))) + "." + goodParts[2], stranger.sign(transaction("2000000000000950")),
                pki.sign(transaction("2000000000000951", bundleId: "com.attacker.app")),
            ]),
            ["VERIFICATION_FAILURE", "INVALID_CHAIN", "INVALID_APP_IDENTIFIER"])
        add("statuses-forged", "Get All Subscription Statuses holding a forged transaction and renewal info",
            JSONWriter.string(["data": [["subscriptionGroupIdentifier": "21000001", "lastTransactions": [[
                "originalTransactionId": "2000000000000001", "status": 1,
                "signedTransactionInfo": .string(stranger.sign(TestPayloads.transaction(transactionId: "2000000000000952"))),
                "signedRenewalInfo": .string(goodParts[0] + "." + b64(JSONWriter.string(TestPayloads.renewalInfo(signedDate: t0 + 11)))  + "." + goodParts[2]),
            ]]]]]),
            ["INVALID_CHAIN", "VERIFICATION_FAILURE"])
        return cases
    }

    /// The configuration text the corpus is checked under.
    package static func configText(environment: String, root: String) -> String {
        Workspace.configText(maxInputBytes: maxInputBytes, environment: environment, root: root)
    }
}
