import EntitlementCore
@testable import EventStore
import Foundation
import SchemaMigrations
import Testing

/// How `lifecycle_events` keeps a line (Migrations/sql/028_lifecycle_compact.sql): the
/// line read back is the one the event gives, byte for byte, whatever its values; an id
/// is kept once; cursors go on after the largest; rows of the older table read the same.
@Suite struct LifecycleRowTests {
    static let rules = Rules(
        version: "rows-1",
        products: ["pro.monthly": ProductRule(entitlements: ["pro", "extra"]), "coins": ProductRule(entitlements: [])])

    /// Events of every type, with values of every form a column keeps: ids and keys that are
    /// numbers SQLite prints back the same and ones it would not (leading zeros, 19 digits,
    /// signs), no transaction, a transaction other than the id's, fields kept in the shape
    /// and in the row, nulls, fractions, text that needs escaping.
    static let events: [LifecycleEvent] = {
        var events: [LifecycleEvent] = [
            LifecycleEvent(
                id: "SUBSCRIPTION_STARTED:2000000000000001", type: .subscriptionStarted, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000001", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD", extra: JSONObject([("periodType", "TRIAL")]),
                effectiveAt: 1_735_689_600_000),
            LifecycleEvent(
                id: "RENEWAL:0123", type: .renewal, customerKey: "otid:0123", originalTransactionId: "0123", transactionId: "0123",
                productId: "pro.monthly", environment: "Sandbox", price: 0, currency: "EUR",
                extra: JSONObject([("periodType", "NORMAL"), ("isTrialConversion", true)]), effectiveAt: 1),
            LifecycleEvent(
                id: "RENEWAL:9223372036854775807", type: .renewal, customerKey: "9223372036854775807",
                originalTransactionId: "-5", transactionId: "9223372036854775807", productId: "pro.monthly",
                environment: "Production", price: -1, currency: "USD",
                extra: JSONObject([("periodType", "NORMAL"), ("isTrialConversion", false)]), effectiveAt: 2),
            LifecycleEvent(
                id: "PRODUCT_CHANGE:0", type: .productChange, customerKey: "0", originalTransactionId: "0", transactionId: "0",
                productId: "pro.yearly", environment: nil, price: nil, currency: nil,
                extra: JSONObject([("fromProductId", "pro.monthly"), ("isTrialConversion", false)]), effectiveAt: 3),
            LifecycleEvent(
                id: "AUTO_RENEW_DISABLED:2000000000000001:1735689700000", type: .autoRenewDisabled, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000009", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD", extra: JSONObject([("expirationIntent", 1)]),
                effectiveAt: 1_735_689_700_000),
            LifecycleEvent(
                id: "AUTO_RENEW_ENABLED:2000000000000001:1735689800000", type: .autoRenewEnabled, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000009", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD", effectiveAt: 1_735_689_800_000),
            LifecycleEvent(
                id: "BILLING_ISSUE:2000000000000001:1735689900000", type: .billingIssue, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000009", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD",
                extra: JSONObject([("gracePeriodExpiresDate", 1_736_000_000_000)]), effectiveAt: 1_735_689_900_000),
            LifecycleEvent(
                id: "BILLING_ISSUE:2000000000000001:1735690000000", type: .billingIssue, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000009", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD", extra: JSONObject([("gracePeriodExpiresDate", nil)]),
                effectiveAt: 1_735_690_000_000),
            LifecycleEvent(
                id: "EXPIRATION:2000000000000001:1738368000000", type: .expiration, customerKey: "704000000000000001",
                originalTransactionId: "2000000000000001", transactionId: "2000000000000009", productId: "pro.monthly",
                environment: "Production", price: 9990, currency: "USD", extra: JSONObject([("reason", nil)]),
                effectiveAt: 1_738_368_000_000),
            LifecycleEvent(
                id: "PURCHASE:5000000000000003", type: .purchase, customerKey: "704000000000000003",
                originalTransactionId: "5000000000000003", transactionId: "5000000000000003", productId: "coins",
                environment: "Production", price: 990, currency: "USD",
                extra: JSONObject([("quantity", 3), ("productType", "Consumable")]), effectiveAt: 1_735_689_603_000),
            LifecycleEvent(
                id: "REFUND:5000000000000003:1735700000000", type: .refund, customerKey: "704000000000000003",
                originalTransactionId: "5000000000000003", transactionId: "5000000000000003", productId: "coins",
                environment: "Production", price: 990, currency: "USD",
                extra: JSONObject([
                    ("revocationType", "REFUND_PARTIAL"), ("revocationPercentage", 50000), ("refundedAmount", 495),
                    ("ratio", .double(0.5)),
                ]), effectiveAt: 1_735_700_000_000),
            LifecycleEvent(
                id: "FAMILY_REVOKE:t-1:5", type: .familyRevoke, customerKey: "app-\u{e9}\"quoted\"", originalTransactionId: "o-1",
                transactionId: "t-1", productId: "pro.monthly", environment: "Xcode", effectiveAt: 5),
            LifecycleEvent(
                id: "REFUND_REVERSED:t-1:6", type: .refundReversed, customerKey: "app-\u{e9}\"quoted\"", originalTransactionId: "o-1",
                transactionId: "t-1", productId: "pro.monthly", environment: "Xcode", effectiveAt: 6),
            LifecycleEvent(
                id: "CONSUMPTION_REQUEST:5a1c-\u{1F600}", type: .consumptionRequest, customerKey: "704000000000000003",
                transactionId: "5000000000000003", productId: "coins", environment: "Production", price: 990, currency: "USD",
                extra: JSONObject([("deadline", 1_735_743_200_000), ("reason", "UNINTENDED_PURCHASE")]), effectiveAt: 7),
            LifecycleEvent(
                id: "CONSENT_RESCINDED:uuid-2", type: .consentRescinded, customerKey: "704000000000000003", environment: "Production",
                effectiveAt: 8),
            LifecycleEvent(
                id: "CUSTOMER_MERGED:otid:0123:704000000000000001", type: .customerMerged, customerKey: "704000000000000001",
                originalTransactionId: "0123", environment: "Sandbox", extra: JSONObject([("from", "otid:0123")]), effectiveAt: 9),
            LifecycleEvent(
                id: "TRANSFER:link-7", type: .transfer, customerKey: "704000000000000001", environment: "Production",
                extra: JSONObject([("from", "user-a"), ("to", nil)]), effectiveAt: 10),
            LifecycleEvent(
                id: "RENEWAL:", type: .renewal, customerKey: "", transactionId: "", productId: "unknown.product",
                extra: JSONObject([("periodType", "NORMAL"), ("isTrialConversion", false)]), effectiveAt: 11),
        ]
        for type in [LifecycleEventType.grantStarted, .grantEnded, .grantRevoked] {
            var grant = LifecycleEvent(
                id: "\(type.rawValue):grant-1", type: type, customerKey: "704000000000000001", environment: "Production",
                extra: JSONObject([("grantId", "grant-1")]), effectiveAt: 12)
            grant.grantedEntitlements = ["pro", "support"]
            events.append(grant)
        }
        return events
    }()

    /// The line `lifecycle` prints for `event` recorded at `cursor` and `recordedAt`.
    static func expectedLine(_ event: LifecycleEvent, cursor: Int64, recordedAt: Int64) -> String {
        let record = LifecycleRecord(
            cursor: cursor, id: event.id, type: event.type, appTransactionId: event.customerKey, effectiveAt: event.effectiveAt,
            recordedAt: recordedAt, fields: event.line(entitlements: event.entitlements(under: rules), recordedAt: recordedAt))
        return JSONWriter.string(record.json())
    }

    static func record(_ store: EventStore, _ events: [LifecycleEvent], at now: Int64) throws -> Int {
        try store.rawConnection.write {
            (try events.filter { try store.recordLifecycleEvent($0, rules: rules, now: now) }.count, .commit)
        }
    }

    @Test(
        "an id's tail is what follows its type and a colon, byte for byte",
        arguments: [
            ("EXPIRATION:2000000000000001:1766275200000", "EXPIRATION", "2000000000000001:1766275200000" as String?),
            ("EXPIRATION:", "EXPIRATION", ""), ("RENEWAL:é:1", "RENEWAL", "é:1"),
            ("EXPIRATION", "EXPIRATION", nil), ("EXPIRATIONX1", "EXPIRATION", nil), ("EXPIRATIO", "EXPIRATION", nil),
            ("", "RENEWAL", nil), ("RENEWAL_EXTENDED:1", "RENEWAL", nil), ("RENEWAL:1", "RENEWAL_EXTENDED", nil),
            ("renewal:1", "RENEWAL", nil), ("E\u{301}XPIRATION:1", "EXPIRATION", nil),
        ])
    func idTail(id: String, type: String, tail: String?) {
        #expect(EventStore.idTail(id, after: type) == tail)
    }

    @Test("every type's line reads back byte for byte; an id is kept once; cursors go on after the largest")
    func roundTrip() throws {
        #expect(LifecycleRow.types.count == LifecycleEventType.allCases.count)
        #expect(Set(LifecycleRow.types) == Set(LifecycleEventType.allCases))
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try Self.record(store, Self.events, at: 1_000) == Self.events.count)
        let read = try store.lifecycle(after: 0)
        #expect(read.count == Self.events.count)
        for (index, (record, event)) in zip(read, Self.events).enumerated() {
            #expect(record.cursor == Int64(index + 1))
            #expect(record.id == event.id)
            #expect(JSONWriter.string(record.json()) == Self.expectedLine(event, cursor: Int64(index + 1), recordedAt: 1_000))
        }
        // A fresh connection (nothing remembered) reads the same lines.
        let reader = try EventStore(path: store.path, hash: StoreFixtures.hash, mode: .readOnly, readsFollowedCopy: false)
        #expect(try reader.lifecycle(after: 0) == read)
        #expect(try reader.lifecycle(after: 3, limit: 2).map(\.cursor) == [4, 5])

        // Every id again, with other values: nothing recorded, nothing changed.
        var again = Self.events
        for index in again.indices { again[index].effectiveAt += 1 }
        #expect(try Self.record(store, again, at: 2_000) == 0)
        #expect(try store.lifecycle(after: 0) == read)
        // A new id takes the next cursor.
        var next = Self.events[1]
        next.id = "RENEWAL:0124"
        #expect(try Self.record(store, [next], at: 3_000) == 1)
        #expect(try store.lastLifecycleCursor() == Int64(Self.events.count + 1))
        // The shared values are kept once: far fewer shapes than lines.
        let shapes = try store.rawConnection.scalarInt("SELECT count(*) FROM lifecycle_shapes") ?? 0
        #expect(shapes > 0 && shapes < Int64(Self.events.count))
        // The view people read with sqlite3 names each line's id.
        #expect(try store.rawConnection.scalarString("SELECT id FROM lifecycle WHERE cursor = 3") == Self.events[2].id)
    }

    @Test("a shape written by a transaction that rolled back is written again, not named")
    func shapeAfterRollback() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let event = Self.events[0]
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try store.rawConnection.write { () throws -> (Void, Connection.Completion) in
                _ = try store.recordLifecycleEvent(event, rules: Self.rules, now: 1_000)
                throw Abandon()
            }
        }
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM lifecycle_shapes") == 0)
        #expect(try Self.record(store, [event], at: 2_000) == 1)
        #expect(try store.lifecycle(after: 0).map { JSONWriter.string($0.json()) } == [Self.expectedLine(event, cursor: 1, recordedAt: 2_000)])
    }

    @Test("the feed's rows and shapes cannot be updated or deleted")
    func immutable() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try Self.record(store, Array(Self.events.prefix(2)), at: 1_000)
        for sql in [
            "UPDATE lifecycle_events SET recorded_at = 0", "DELETE FROM lifecycle_events",
            "UPDATE lifecycle_shapes SET value = '[]'", "DELETE FROM lifecycle_shapes",
        ] {
            #expect(throws: (any Error).self) { try store.rawConnection.execute(sql) }
        }
        #expect(try store.lifecycle(after: 0).count == 2)
    }

    @Test("Migration 028: rows of the older table keep their cursors and lines; their ids stay recorded once")
    func migratesOlderRows() throws {
        let path = StoreFixtures.temporaryDatabase()
        let older = Array(Self.events.prefix(12))
        do {
            let connection = try Connection(path: path, mode: .readWrite)
            try Migrator.migrate(connection, migrations: SchemaMigrations.migrations.filter { $0.identifier < "028" })
            let insert = try connection.prepare(
                "INSERT INTO lifecycle (cursor, id, customer_key, type, effective_at, recorded_at, fields) VALUES (?, ?, ?, ?, ?, ?, ?)")
            // Cursors with a gap, as an older table may have.
            for (index, event) in older.enumerated() {
                try insert.bind(1, Int64(index < 5 ? index + 1 : index + 3))
                try insert.bind(2, event.id)
                try insert.bind(3, event.customerKey)
                try insert.bind(4, event.type.rawValue)
                try insert.bind(5, event.effectiveAt)
                try insert.bind(6, Int64(500 + index))
                try insert.bind(7, JSONWriter.string(event.storedValues(entitlements: event.entitlements(under: Self.rules))))
                try insert.step()
                insert.reset()
            }
        }
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let read = try store.lifecycle(after: 0)
        #expect(read.map(\.cursor) == older.indices.map { Int64($0 < 5 ? $0 + 1 : $0 + 3) })
        for (index, (record, event)) in zip(read, older).enumerated() {
            #expect(JSONWriter.string(record.json()) == Self.expectedLine(event, cursor: record.cursor, recordedAt: Int64(500 + index)))
        }
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM lifecycle_events WHERE shape IS NULL") == Int64(older.count))
        // The older ids are recorded: again, nothing; the rest after the largest cursor.
        #expect(try Self.record(store, older, at: 2_000) == 0)
        #expect(try Self.record(store, Self.events, at: 2_000) == Self.events.count - older.count)
        let all = try store.lifecycle(after: 0)
        #expect(all.map(\.cursor) == read.map(\.cursor) + (1...(Self.events.count - older.count)).map { Int64(older.count + 2 + $0) })
        #expect(all.map(\.id) == Self.events.map(\.id))
    }
}
