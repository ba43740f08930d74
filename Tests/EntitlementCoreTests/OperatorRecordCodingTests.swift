@testable import EntitlementCore
import Foundation
import Testing
import TestSupport

/// A stored state keeps its operator records field by field (state format 5), so that a
/// query parses no JSON; states stored with the records' canonical JSON still read.
@Suite("Operator record coding")
struct OperatorRecordCodingTests {
    /// An app user's state as an earlier build stored it (format 2, each record its
    /// canonical JSON): `grant --id g-1 --app-user-id user-7 --entitlement pro --from
    /// 2026-01-01T00:00:00Z --until 2026-02-01T00:00:00Z --reason "make good" --operator ana`,
    /// then `credit --id c-1 --app-user-id user-7 --currency coins --units 25`.
    static let storedWithJSON =
        "02030B757365723A757365722D377E7B22736F75726365223A226F70657261746F72222C226B696E64223A22637265646974222C226964223A22632D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313232312C2263757272656E6379223A22636F696E73222C22756E697473223A32357DC4017B22736F75726365223A226F70657261746F72222C226B696E64223A226772616E74222C226964223A22672D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313139362C22656E7469746C656D656E74223A2270726F222C2266726F6D223A313736373232353630303030302C22756E74696C223A313736393930343030303030302C226F70657261746F72223A22616E61222C22726561736F6E223A226D616B6520676F6F64227D0000004002010200"

    static func evaluate(_ bytes: [UInt8], at: Int64) throws -> CustomerView {
        try bytes.withUnsafeBytes { buffer throws(CodecError) in
            try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at)
        }
    }

    @Test func aStateStoredWithTheRecordsJSONReadsAndIsWrittenAgainFieldByField() throws {
        let old = hexBytes(Self.storedWithJSON)
        #expect(old.first == 2)
        let state = try StateCodec.decode(old)
        #expect(state.key == "user:user-7")
        #expect(
            state.operatorRecords["grant:g-1"]
                == OperatorRecord(
                    id: "g-1", appUserId: "user-7", recordedAt: 1_795_874_781_196, operatorName: "ana", reason: "make good",
                    action: .grant(entitlement: "pro", from: 1_767_225_600_000, until: 1_769_904_000_000)))
        #expect(
            state.operatorRecords["credit:c-1"]
                == OperatorRecord(id: "c-1", appUserId: "user-7", recordedAt: 1_795_874_781_221, action: .credit(currency: "coins", units: 25)))
        #expect(state.operatorRecords.count == 2)

        let new = StateCodec.encode(state)
        #expect(new.first == StateCodec.formatVersionWithOperatorFields)
        #expect(try StateCodec.decode(new) == state)
        // No JSON left in the new bytes: the records' members are not spelled out.
        #expect(!String(decoding: new, as: UTF8.self).contains("\"source\""))
        #expect(new.count < old.count)
        for at: Int64 in [1_767_225_599_999, 1_767_225_600_000, 1_769_903_999_999, 1_769_904_000_000, 1_795_874_781_221] {
            let before = try Self.evaluate(old, at: at)
            #expect(try Self.evaluate(new, at: at) == before)
            #expect(before == Evaluation.evaluate(state, rules: testRules, at: at))
        }
        let inWindow = try Self.evaluate(new, at: 1_768_000_000_000)
        #expect(inWindow.entitlements.first { $0.name == "pro" }?.grantId == "g-1")
        #expect(try Self.evaluate(new, at: 1_795_874_781_221).balances.map(\.amount) == [25])
    }

    @Test func eventFactsStoredWithTheRecordsJSONReadAndAreWrittenAsBefore() throws {
        // `grant --id g-1 ...` above, as an earlier build stored its facts (format 1).
        let old = hexBytes(
            "0105C4017B22736F75726365223A226F70657261746F72222C226B696E64223A226772616E74222C226964223A22672D31222C22617070557365724964223A22757365722D37222C227265636F726465644174223A313739353837343738313139362C22656E7469746C656D656E74223A2270726F222C2266726F6D223A313736373232353630303030302C22756E74696C223A313736393930343030303030302C226F70657261746F72223A22616E61222C22726561736F6E223A226D616B6520676F6F64227D"
        )
        let event = try EventCodec.decode(old, seq: 1)
        guard case .operatorAction(let record) = event.body else {
            Issue.record("not an operator's record: \(event.body)")
            return
        }
        #expect(record.identity == "grant:g-1")
        #expect(record.reason == "make good")
        let new = EventCodec.encode(event)
        #expect(new.first == EventCodec.formatVersionWithOperatorFields)
        #expect(new.count < old.count)
        #expect(try EventCodec.decode(new, seq: 1) == event)
        // As format 1 writes it: the earlier bytes exactly.
        #expect(EventCodec.encode(event, formatVersion: EventCodec.formatVersionWithoutDisplayFacts) == old)
        #expect(EventCodec.encode(event, formatVersion: EventCodec.formatVersionWithOperatorFields) == new)
    }

    /// Every action, with every optional member present and absent.
    static var records: [OperatorRecord] {
        let actions: [OperatorAction] = [
            .grant(entitlement: "pro", from: 1_700_000_000_000, until: 1_700_086_400_000),
            .grantRevoked(at: 1_700_050_000_000),
            .credit(currency: "coins", units: -40),
            .credit(currency: "gems", units: Int64.max),
            .link,
        ]
        var records: [OperatorRecord] = []
        for (index, action) in actions.enumerated() {
            for mask in 0..<32 {
                // appTransactionId and originalTransactionId are never both named.
                guard mask & 3 != 3 else { continue }
                records.append(
                    OperatorRecord(
                        id: "op-\(index)-\(mask)", appTransactionId: mask & 1 != 0 ? "7041000000000001" : nil,
                        originalTransactionId: mask & 2 != 0 ? "2000000000000001" : nil,
                        appUserId: mask & 4 != 0 ? "ü-user" : nil, recordedAt: 1_700_000_000_123 + Int64(mask),
                        operatorName: mask & 8 != 0 ? "support@example.com" : nil, reason: mask & 16 != 0 ? "goodwill, \"twice\"" : nil,
                        action: action))
            }
        }
        return records
    }

    @Test func everyRecordReadsBackTheSameFromItsFieldsAsFromItsJSON() throws {
        for record in Self.records {
            var fields = ByteWriter(numberingStrings: false)
            fields.operatorRecordFields(record)
            var json = ByteWriter(numberingStrings: false)
            json.operatorRecordJSON(record)
            let fromFields = try withRawBytes(fields.bytes) { buffer throws(CodecError) in
                var reader = ByteReader(buffer)
                let decoded = try reader.operatorRecordFields()
                try reader.finish()
                return decoded
            }
            let fromJSON = try withRawBytes(json.bytes) { buffer throws(CodecError) in
                var reader = ByteReader(buffer)
                return try reader.operatorRecordJSON()
            }
            #expect(fromFields == record)
            #expect(fromJSON == record)
            #expect(fields.bytes.count < json.bytes.count)
        }
    }

    static func readFields(_ bytes: [UInt8]) -> CodecError? {
        do {
            _ = try withRawBytes(bytes) { buffer throws(CodecError) in
                var reader = ByteReader(buffer)
                return try reader.operatorRecordFields()
            }
            return nil
        } catch {
            return error
        }
    }

    @Test func malformedFieldsAreRefusedWithTheirCode() throws {
        var good = ByteWriter(numberingStrings: false)
        good.operatorRecordFields(
            OperatorRecord(id: "g", appTransactionId: "1", recordedAt: 1_700_000_000_000, action: .grant(entitlement: "pro", from: 1, until: 2)))
        let bytes = good.bytes
        #expect(Self.readFields(bytes) == nil)
        // An unknown flag bit.
        var flagged = bytes
        flagged[0] |= 1 << 5
        #expect(Self.readFields(flagged)?.code == .invalidTag)
        // Both customer ids named.
        var both = bytes
        both[0] = 3
        #expect(Self.readFields(both)?.code == .inconsistent)
        // An unknown kind.
        var kind = bytes
        kind[1] = 4
        let unknownKind = Self.readFields(kind)
        #expect(unknownKind?.code == .invalidTag)
        #expect(unknownKind?.description.contains("operator record kind 4") == true)
        // Cut short anywhere.
        for length in 0..<bytes.count {
            #expect(Self.readFields(Array(bytes[..<length]))?.code == .truncated, "\(length) bytes")
        }
    }
}
