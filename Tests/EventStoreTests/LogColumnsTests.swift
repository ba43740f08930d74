import EntitlementCore
import EventStore
import Foundation
import Testing

/// The log keeps signatures as bytes and nested JWS paths as slot numbers where
/// that gives back their text, and reads rows of both forms.
@Suite struct LogColumnsTests {
    /// A notification whose JWS split into parts: its own and its nested transaction's
    /// payload base64url-encoded, signatures of `signatureBytes` (or the given texts).
    static func notification(uuid: String, transactionId: String, signature: String? = nil, nestedSignature: String? = nil) -> VerifiedInput {
        var object = JSONObject()
        object["transactionId"] = .string(transactionId)
        object["originalTransactionId"] = "1000"
        object["appTransactionId"] = "app-1"
        object["bundleId"] = "com.example.app"
        object["productId"] = "pro.monthly"
        object["purchaseDate"] = .int(1_700_000_000_000)
        object["expiresDate"] = .int(1_702_592_000_000)
        object["quantity"] = 1
        object["type"] = "Auto-Renewable Subscription"
        object["signedDate"] = .int(1_700_000_000_500)
        object["environment"] = "Sandbox"
        object["inAppOwnershipType"] = "PURCHASED"
        let transactionJSON = JSONValue.object(object)
        let header = Base64.encodeURL(Array(#"{"alg":"ES256","x5c":["MIIB"]}"#.utf8))
        let nestedJWS = StoredJWSTests.jws(
            header: header, payload: JSONWriter.string(transactionJSON),
            signature: nestedSignature ?? Base64.encodeURL((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ transactionId.count) }))
        let json: JSONValue = [
            "notificationType": "DID_RENEW", "notificationUUID": .string(uuid), "signedDate": .int(1_700_000_001_000), "version": "2.0",
            "data": ["environment": "Sandbox", "bundleId": "com.example.app", "signedTransactionInfo": .string(nestedJWS)],
        ]
        let outer = StoredJWSTests.jws(
            header: header, payload: JSONWriter.string(json),
            signature: signature ?? Base64.encodeURL((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ uuid.count) }))
        let transaction = SignedTransaction(jws: nestedJWS, payload: try! TransactionPayload(json: transactionJSON))
        return .notification(SignedNotification(jws: outer, payload: try! NotificationPayload(json: json), transaction: transaction))
    }

    static func jws(_ input: VerifiedInput) -> String {
        guard case .notification(let n) = input else { fatalError() }
        return n.jws
    }

    @Test func signaturesAreKeptAsBytesAndPathsAsSlotsAndComeBackByteForByte() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let input = Self.notification(uuid: "n-1", transactionId: "t1")
        _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let raw = store.rawConnection
        #expect(try raw.scalarString("SELECT typeof(signature) FROM events WHERE seq = 1") == "blob")
        #expect(try raw.scalarInt("SELECT length(signature) FROM events WHERE seq = 1") == 64)
        #expect(try raw.scalarString("SELECT typeof(signature) FROM jws_nested WHERE event_seq = 1") == "blob")
        #expect(try raw.scalarString("SELECT typeof(path) FROM jws_nested WHERE event_seq = 1") == "integer")
        #expect(try raw.scalarInt("SELECT path FROM jws_nested WHERE event_seq = 1") == 1)
        #expect(try store.loggedInput(at: 1) == Self.jws(input))
        // The view for people reading the database still decodes the nested JWS in place.
        #expect(try raw.scalarString("SELECT json_extract(payload, '$.data.signedTransactionInfo.transactionId') FROM events_decoded WHERE seq = 1") == "t1")
        #expect(try raw.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'events_by_original_transaction'") == 0)
        let report = try store.audit(verify: { _, _ in nil })
        #expect(report.events == 1 && report.firstMismatch == nil)
    }

    /// A signature whose text is not the canonical base64url of its bytes (unused bits
    /// set in its last character) would not come back from bytes: it stays text.
    @Test func aSignatureThatIsNotCanonicalBase64urlStaysText() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let canonical = Base64.encodeURL([0xAB])  // "qw": the last character's low four bits are zero
        #expect(canonical == "qw")
        let input = Self.notification(uuid: "n-2", transactionId: "t2", signature: "qx", nestedSignature: canonical)
        _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let raw = store.rawConnection
        #expect(try raw.scalarString("SELECT typeof(signature) FROM events WHERE seq = 1") == "text")
        #expect(try raw.scalarString("SELECT typeof(signature) FROM jws_nested WHERE event_seq = 1") == "blob")
        #expect(try store.loggedInput(at: 1) == Self.jws(input))
    }

    /// Rows written before migration 025 (text signatures and paths) are read as they
    /// were, beside rows written after it, and the chain over both audits clean.
    @Test func rowsWrittenInTextFormAreReadBesideCompactOnes() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let first = Self.notification(uuid: "n-3", transactionId: "t3")
        let second = Self.notification(uuid: "n-4", transactionId: "t4")
        _ = try store.append([.verified(first)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        // The first event's row put back in the form an earlier engine wrote.
        let raw = try Connection(path: path)
        try raw.execute("DROP TRIGGER events_are_immutable_update; DROP TRIGGER jws_nested_are_immutable_update;")
        for (table, key) in [("events", "seq"), ("jws_nested", "event_seq")] {
            let read = try raw.prepare("SELECT signature FROM \(table) WHERE \(key) = 1")
            #expect(try read.step())
            let text = Base64.encodeURL(read.blob(0) ?? [])
            read.reset()
            let write = try raw.prepare("UPDATE \(table) SET signature = ? WHERE \(key) = 1")
            try write.bind(1, text)
            try write.step()
            write.reset()
        }
        try raw.execute("UPDATE jws_nested SET path = '$.data.signedTransactionInfo' WHERE event_seq = 1")
        #expect(try raw.scalarString("SELECT typeof(path) FROM jws_nested WHERE event_seq = 1") == "text")
        #expect(try raw.scalarString("SELECT typeof(signature) FROM events WHERE seq = 1") == "text")
        _ = try store.append([.verified(second)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        #expect(try raw.scalarString("SELECT typeof(signature) FROM events WHERE seq = 2") == "blob")
        let reader = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try reader.loggedInput(at: 1) == Self.jws(first))
        #expect(try reader.loggedInput(at: 2) == Self.jws(second))
        #expect(try raw.scalarString("SELECT json_extract(payload, '$.data.signedTransactionInfo.transactionId') FROM events_decoded WHERE seq = 1") == "t3")
    }
}
