import EntitlementCore
import EventStore
import Foundation
import Testing

/// The change feed keeps each customer's last reported answer in the binary codec,
/// and still reads the JSON text that stores kept before.
@Suite struct ReportedAnswerStorageTests {
    @Test("an answer round-trips through the codec, with and without an expiry; other bytes are refused")
    func codecRoundTrip() throws {
        let answers = [
            ReportedAnswer(),
            ReportedAnswer(active: ["pro": 1_702_592_000_000]),
            ReportedAnswer(active: ["pro": nil, "gold": -1, "é": Int64.max]),
        ]
        for answer in answers {
            #expect(try ReportedAnswer(encoded: answer.encoded()) == answer)
        }
        // The bytes do not depend on the dictionary's order.
        #expect(ReportedAnswer(active: ["a": 1, "b": nil]).encoded() == ReportedAnswer(active: ["b": nil, "a": 1]).encoded())
        let good = answers[2].encoded()
        #expect(throws: CodecError.self) { try ReportedAnswer(encoded: []) }
        #expect(throws: CodecError.self) { try ReportedAnswer(encoded: [9] + good.dropFirst()) }
        #expect(throws: CodecError.self) { try ReportedAnswer(encoded: Array(good.dropLast())) }
        #expect(throws: CodecError.self) { try ReportedAnswer(encoded: good + [0]) }
    }

    @Test("the append writes the answer as the codec's bytes")
    func appendWritesTheCodec() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1_700_000_001_000)
        #expect(try store.rawConnection.scalarString("SELECT typeof(answer) FROM customer_rows WHERE customer_key = 'app-1'") == "blob")
        let statement = try store.rawConnection.prepare("SELECT answer FROM customer_rows WHERE customer_key = 'app-1'")
        #expect(try statement.step())
        let bytes = try #require(statement.blob(0))
        #expect(try ReportedAnswer(encoded: bytes) == ReportedAnswer(active: ["pro": 1_702_592_000_000]))
    }

    @Test("a row a store wrote as JSON text is read as the answer it holds: nothing is reported again")
    func legacyJSONRowIsRead() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1_700_000_001_000)
        #expect(try store.lastChangeCursor() == 1)
        try store.rawConnection.execute(#"UPDATE customer_rows SET answer = '[["pro",1702592000000]]' WHERE customer_key = 'app-1'"#)
        // Another version of the same transaction: the answer stays, so nothing is recorded
        // (had the JSON not been read, "pro" would be reported active again).
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", signed: 1_700_000_000_600))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: 1_700_000_002_000)
        #expect(try store.eventCount() == 2)
        #expect(try store.lastChangeCursor() == 1)
        // A JSON row that says something else is read as what it says: the difference is recorded.
        try store.rawConnection.execute(#"UPDATE customer_rows SET answer = '[]' WHERE customer_key = 'app-1'"#)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1", signed: 1_700_000_000_700))], rules: StoreFixtures.rules, rulesJSON: "{}",
            receivedAt: 1_700_000_003_000)
        let changes = try store.changes(after: 1)
        #expect(changes.count == 1)
        #expect(changes.first?.entitlement == "pro")
        #expect(changes.first?.active == true)
        #expect(try store.rawConnection.scalarString("SELECT typeof(answer) FROM customer_rows WHERE customer_key = 'app-1'") == "blob")
    }
}
