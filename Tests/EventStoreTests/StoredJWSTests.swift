import EntitlementCore
import EventStore
import Testing
import TestSupport

/// The log keeps a JWS in parts; the parts must give back the JWS
/// byte for byte, or the hash chain computed over it would no longer match.
@Suite struct StoredJWSTests {
    static func jws(header: String, payload: String, signature: String) -> String {
        header + "." + Base64.encodeURL(Array(payload.utf8)) + "." + signature
    }

    @Test func eachNestedSlotHasThePathItsKeysSpell() {
        #expect(StoredJWS.path(of: .own) == nil && StoredJWS.keys(of: .own) == nil)
        let slots: [RawRef.Slot] = [.nestedTransaction, .nestedRenewalInfo, .nestedAppTransaction]
        #expect(slots.map { StoredJWS.path(of: $0) } == ["$.data.signedTransactionInfo", "$.data.signedRenewalInfo", "$.appData.signedAppTransactionInfo"])
        for (slot, nested) in zip(slots, StoredJWS.nestedPaths) {
            #expect(nested.path == StoredJWS.path(of: slot) && nested.keys == StoredJWS.keys(of: slot))
            #expect(nested.path == "$." + nested.keys.joined(separator: "."))
        }
    }

    @Test func base64urlEncodingIsTheInverseOfTheStrictDecoder() {
        var random = SplitMix64(seed: 7)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let text = Base64.encodeURL(bytes)
            #expect(Base64.decodeURL(Substring(text)) == bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        }
    }

    @Test func randomNotificationsSplitAndComeBackByteForByte() {
        var random = SplitMix64(seed: 0x16)
        for round in 0..<300 {
            let header = Base64.encodeURL(Array("{\"alg\":\"ES256\",\"x5c\":[\"\(random.text(random.int(0..<40)))\"]}".utf8))
            let nestedHeader = random.int(0..<2) == 0 ? header : Base64.encodeURL(Array("{\"alg\":\"ES256\",\"r\":\(round)}".utf8))
            let transaction = Self.jws(header: nestedHeader, payload: "{\"transactionId\":\"\(round)\",\"note\":\"\(random.text(random.int(0..<30)))\"}", signature: Base64.encodeURL((0..<64).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            let renewal = Self.jws(header: nestedHeader, payload: "{\"autoRenewStatus\":\(random.int(0..<2))}", signature: "c2ln")
            let withRenewal = random.int(0..<3) != 0
            let spacing = random.int(0..<2) == 0 ? "" : " "
            let payload = "{\"notificationType\":\"DID_RENEW\",\"data\":{\"signedTransactionInfo\":\(spacing)\"\(transaction)\""
                + (withRenewal ? ",\"signedRenewalInfo\":\"\(renewal)\"" : "") + ",\"x\":\"\(random.text(random.int(0..<20)))\"}}"
            let signature = Base64.encodeURL((0..<64).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            let outer = Self.jws(header: header, payload: payload, signature: signature)
            var candidates = [("$.data.signedTransactionInfo", transaction)]
            if withRenewal { candidates.append(("$.data.signedRenewalInfo", renewal)) }
            guard let stored = StoredJWS(jws: outer, nested: candidates) else {
                Issue.record("round \(round): did not split")
                continue
            }
            #expect(stored.jws == outer, "round \(round)")
            #expect(stored.nested.count == candidates.count)
            #expect(stored.nestedJWS(at: "$.data.signedTransactionInfo") == transaction)
            #expect(!String(decoding: stored.body, as: UTF8.self).contains(transaction))
            // What the log's reader gets back from the columns is the same.
            let again = StoredJWS(header: stored.header, signature: stored.signature, body: stored.body, nested: stored.nested)
            #expect(again.jws == outer)
        }
    }

    @Test func aNestedJWSFoundTwiceOrNotAtAllStaysInTheBody() {
        let nested = Self.jws(header: "aGVhZGVy", payload: "{\"a\":1}", signature: "c2ln")
        let twice = Self.jws(header: "aA", payload: "{\"x\":\"\(nested)\",\"y\":\"\(nested)\"}", signature: "c2ln")
        let stored = StoredJWS(jws: twice, nested: [("$.x", nested)])
        #expect(stored?.nested.isEmpty == true && stored?.jws == twice)
        let absent = Self.jws(header: "aA", payload: "{\"x\":1}", signature: "c2ln")
        #expect(StoredJWS(jws: absent, nested: [("$.x", nested)])?.jws == absent)
        // A candidate that is not a JWS is not cut out.
        let odd = Self.jws(header: "aA", payload: "{\"x\":\"not.a.jws!\"}", signature: "c2ln")
        let kept = StoredJWS(jws: odd, nested: [("$.x", "not.a.jws!")])
        #expect(kept?.nested.isEmpty == true && kept?.jws == odd)
    }

    @Test func whatWouldNotComeBackExactlyDoesNotSplit() {
        // Padding, a non-canonical last character, the standard alphabet, bytes that are not UTF-8, two parts, four parts.
        let payload = Base64.encodeURL(Array("{\"a\":1}".utf8))
        for jws in [
            "aA." + payload + "=.c2ln",
            "aA.eyJhIjoxfF.c2ln",
            "aA.eyJh+/8x.c2ln",
            "aA." + Base64.encodeURL([0xFF, 0xFE, 0x7B]) + ".c2ln",
            "aA." + payload,
            "aA." + payload + ".c2ln.x",
        ] {
            #expect(StoredJWS(jws: jws, nested: []) == nil, "\(jws)")
        }
        #expect(StoredJWS(jws: "aA." + payload + ".c2ln", nested: [])?.jws == "aA." + payload + ".c2ln")
    }
}

extension SplitMix64 {
    /// `count` pieces of text: ASCII, multi-byte UTF-8, and JSON escapes, as Apple's payloads may hold.
    mutating func text(_ count: Int) -> String {
        let pieces = ["a", "Z", "0", " ", "é", "日本", "\\\"", "\\n", "€", "-", "_", "😀"]
        return (0..<count).map { _ in pieces[int(0..<pieces.count)] }.joined()
    }
}
