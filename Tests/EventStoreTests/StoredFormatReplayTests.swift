import EntitlementCore
import EventStore
import Foundation
import Testing

/// A replay counts a customer as changed when its data changed, not when the stored
/// format of the same state did: projections written by an earlier build (operator
/// records as their canonical JSON) are the rebuilt ones.
@Suite("Replay over projections of an earlier format")
struct StoredFormatReplayTests {
    /// `user:user-7` as an earlier build stored it: a grant `g-1` and a credit `c-1` (the
    /// records below), each as its canonical JSON (state format 2).
    static let storedWithJSON = "02030B757365723A757365722D377E7B22736F75726365223A226F70657261746F72222C226B696E64223A22637265646974222C226964223A22632D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313232312C2263757272656E6379223A22636F696E73222C22756E697473223A32357DC4017B22736F75726365223A226F70657261746F72222C226B696E64223A226772616E74222C226964223A22672D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313139362C22656E7469746C656D656E74223A2270726F222C2266726F6D223A313736373232353630303030302C22756E74696C223A313736393930343030303030302C226F70657261746F72223A22616E61222C22726561736F6E223A226D616B6520676F6F64227D0000004002010200"

    static let records = [
        OperatorRecord(
            id: "g-1", appUserId: "user-7", recordedAt: 1_795_874_781_196, operatorName: "ana", reason: "make good",
            action: .grant(entitlement: "pro", from: 1_767_225_600_000, until: 1_769_904_000_000)),
        OperatorRecord(id: "c-1", appUserId: "user-7", recordedAt: 1_795_874_781_221, action: .credit(currency: "coins", units: 25)),
    ]

    static let now: Int64 = 1_795_900_000_000

    func store() throws -> EventStore {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        for record in Self.records {
            let outcome = try store.appendOperatorRecord(
                record, given: OperatorCheck.GivenMoments(from: true, until: true), conflictCode: "ID_CONFLICT", rules: StoreFixtures.rules,
                receivedAt: record.recordedAt, check: { _, _ in nil })
            guard case .appended = outcome else {
                Issue.record("\(record.id) was not appended: \(outcome)")
                return store
            }
        }
        return store
    }

    /// Puts `hex` in place of the app user's current projection.
    func storeProjection(_ hex: String, in store: EventStore) throws {
        try store.rawConnection.execute("UPDATE projections SET state = X'\(hex)' WHERE customer_key = 'user:user-7'")
        #expect(try store.rawConnection.scalarInt("SELECT changes()") ?? 0 >= 1)
    }

    func replay(_ store: EventStore) throws -> ReplayReport {
        try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.now, collectDiff: true)
    }

    @Test func theSameStateStoredAsJSONIsNotAChange() throws {
        let store = try store()
        let answer = try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now)
        #expect(answer?.balances.map(\.amount) == [25])
        #expect(try replay(store).changed == 0)

        try storeProjection(Self.storedWithJSON, in: store)
        #expect(try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now) == answer)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM projections WHERE hex(state) = '\(Self.storedWithJSON)'") == 1)
        let report = try replay(store)
        #expect(report.changed == 0)
        #expect(report.diffs.isEmpty)
        // Written again in the current format.
        let format = String(format: "%02X", StateCodec.formatVersionWithOperatorFields)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM projections WHERE customer_key = 'user:user-7' AND substr(hex(state), 1, 2) = '\(format)'") == 1)
        #expect(try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now) == answer)
    }

    /// The two records' facts as an earlier build stored them (event facts format 1, each
    /// record its canonical JSON), by seq.
    static let factsWithJSON: [Int64: String] = [
        1: "0105C4017B22736F75726365223A226F70657261746F72222C226B696E64223A226772616E74222C226964223A22672D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313139362C22656E7469746C656D656E74223A2270726F222C2266726F6D223A313736373232353630303030302C22756E74696C223A313736393930343030303030302C226F70657261746F72223A22616E61222C22726561736F6E223A226D616B6520676F6F64227D",
        2: "01057E7B22736F75726365223A226F70657261746F72222C226B696E64223A22637265646974222C226964223A22632D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313232312C2263757272656E6379223A22636F696E73222C22756E697473223A32357D",
    ]

    @Test func factsStoredAsJSONReplayAndAuditAsBefore() throws {
        let store = try store()
        let answer = try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now)
        let format = String(format: "%02X", EventCodec.formatVersionWithOperatorFields)
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM event_facts WHERE substr(hex(facts), 1, 2) = '\(format)'") == 2)
        try store.rawConnection.execute("DROP TRIGGER event_facts_are_immutable_update")
        for (seq, hex) in Self.factsWithJSON {
            try store.rawConnection.execute("UPDATE event_facts SET facts = X'\(hex)' WHERE seq = \(seq)")
        }
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM event_facts WHERE substr(hex(facts), 1, 2) = '01'") == 2)
        let audit = try store.audit(verify: { _, _ in nil })
        #expect(audit.events == 2)
        #expect(audit.firstMismatch == nil)
        let report = try replay(store)
        #expect(report.changed == 0)
        #expect(try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now) == answer)

        // The credit's JSON facts altered (25 units made 26): the audit names the event.
        let altered = Self.factsWithJSON[2]!.replacingOccurrences(of: "22756E697473223A3235", with: "22756E697473223A3236")
        try store.rawConnection.execute("UPDATE event_facts SET facts = X'\(altered)' WHERE seq = 2")
        #expect(try store.audit(verify: { _, _ in nil }).firstMismatch?.seq == 2)
    }

    @Test func anotherStateStoredAsJSONIsAChange() throws {
        let store = try store()
        #expect(try replay(store).changed == 0)
        // The credit's units 26 where the log says 25 (the same length, canonical still).
        let other = Self.storedWithJSON.replacingOccurrences(of: "22756E697473223A3235", with: "22756E697473223A3236")
        #expect(other != Self.storedWithJSON)
        try storeProjection(other, in: store)
        #expect(try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now)?.balances.map(\.amount) == [26])
        #expect(try replay(store).changed == 1)
        #expect(try store.view(of: "user:user-7", rules: StoreFixtures.rules, at: Self.now)?.balances.map(\.amount) == [25])
    }
}
