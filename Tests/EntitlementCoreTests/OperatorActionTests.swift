import EntitlementCore
import Foundation
import Testing
import TestSupport

/// Operator's grants, revocations, credits and links in the pure core (specification
/// section 13): evaluation, history and lifecycle, on cases worked by hand.
@Suite("Operator actions")
struct OperatorActionTests {
    static func grant(_ id: String, _ entitlement: String = "pro", from: Int64, until: Int64, key: CustomerKey = Customer.app)
        -> OperatorRecord
    {
        var record = OperatorRecord(id: id, recordedAt: from, operatorName: "alice", reason: "outage",
            action: .grant(entitlement: entitlement, from: from, until: until))
        record.target(key)
        return record
    }

    static func revoke(_ id: String, at: Int64, key: CustomerKey = Customer.app) -> OperatorRecord {
        var record = OperatorRecord(id: id, recordedAt: at, action: .grantRevoked(at: at))
        record.target(key)
        return record
    }

    static func credit(_ id: String, _ units: Int64, at: Int64, key: CustomerKey = Customer.app) -> OperatorRecord {
        var record = OperatorRecord(id: id, recordedAt: at, action: .credit(currency: "coins", units: units))
        record.target(key)
        return record
    }

    static func link(_ id: String, to user: String, at: Int64, key: CustomerKey = Customer.app) -> OperatorRecord {
        var record = OperatorRecord(id: id, appUserId: user, recordedAt: at, action: .link)
        record.target(key)
        return record
    }

    /// A monthly subscription bought on day 0, expiring on day 30.
    static func subscribed() -> History {
        let history = History()
        history.add(transaction("1000000000000001", original: Customer.otid, purchase: Time.t0, expires: Time.day(30)))
        return history
    }

    @Test func aGrantAloneGivesItsEntitlementFromFromUntilUntil() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        history.operate(Self.grant("g1", from: Time.day(2), until: Time.day(9)))
        #expect(history.view(at: Time.day(2) - 1).entitlement("pro") == nil)
        let during = history.view(at: Time.day(2)).entitlement("pro")
        #expect(during == EntitlementView(name: "pro", active: true, expiresDate: Time.day(9), grantId: "g1"))
        #expect(during?.source == "grant")
        #expect(during?.json() == ["active": true, "expiresDate": .int(Time.day(9)), "productId": nil, "source": "grant", "grantId": "g1"])
        let after = history.view(at: Time.day(9)).entitlement("pro")
        #expect(after?.active == false)
        #expect(after?.json() == ["active": false, "expiresDate": nil, "productId": nil, "source": nil])
    }

    @Test func theLaterExpiryDecidesAndAPurchaseWinsATie() {
        let history = Self.subscribed()
        history.operate(Self.grant("later", from: Time.day(20), until: Time.day(40)))
        history.operate(Self.grant("tie", from: Time.day(25), until: Time.day(30)))
        let before = history.view(at: Time.day(10)).entitlement("pro")
        #expect(before?.source == "purchase" && before?.expiresDate == Time.day(30) && before?.productId == Product.monthly)
        let both = history.view(at: Time.day(21)).entitlement("pro")
        #expect(both?.source == "grant" && both?.grantId == "later" && both?.expiresDate == Time.day(40) && both?.productId == nil)
        let afterPurchase = history.view(at: Time.day(35)).entitlement("pro")
        #expect(afterPurchase?.grantId == "later" && afterPurchase?.active == true)

        let tie = Self.subscribed()
        tie.operate(Self.grant("tie", from: Time.day(25), until: Time.day(30)))
        let tied = tie.view(at: Time.day(26)).entitlement("pro")
        #expect(tied?.source == "purchase" && tied?.grantId == nil && tied?.productId == Product.monthly)
    }

    @Test func aRevocationEndsTheGrantFromItsMomentOn() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        history.operate(Self.grant("g1", from: Time.day(2), until: Time.day(9)))
        history.operate(Self.revoke("g1", at: Time.day(5)))
        #expect(history.view(at: Time.day(4)).entitlement("pro")?.expiresDate == Time.day(5))
        #expect(history.view(at: Time.day(5)).entitlement("pro")?.active == false)

        let lifecycle = LifecycleEvents.all(state: history.state(), events: history.events, rules: testRules)
        let grants = lifecycle.filter { $0.id.hasPrefix("GRANT_") }
        #expect(grants.map(\.id) == ["GRANT_STARTED:g1", "GRANT_REVOKED:g1"])
        #expect(grants.map(\.effectiveAt) == [Time.day(2), Time.day(5)])
        #expect(grants.first?.entitlements(under: testRules) == ["pro"])
        #expect(grants.first?.line(entitlements: ["pro"], recordedAt: 0)["grantId"] == "g1")

        let unrevoked = History()
        unrevoked.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        unrevoked.operate(Self.grant("g2", from: Time.day(2), until: Time.day(9)))
        let ended = LifecycleEvents.all(state: unrevoked.state(), events: unrevoked.events, rules: testRules).filter { $0.id.hasPrefix("GRANT_") }
        #expect(ended.map(\.id) == ["GRANT_STARTED:g2", "GRANT_ENDED:g2"])
        #expect(LifecycleEvents.due(state: unrevoked.state(), events: unrevoked.events, rules: testRules, now: Time.day(8)).map(\.id)
            .contains("GRANT_ENDED:g2") == false)
    }

    @Test func theTimelineShowsTheGrantWithItsCause() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        history.operate(Self.grant("g1", from: Time.day(2), until: Time.day(9)))
        history.operate(Self.credit("c1", 40, at: Time.day(3)))
        let lines = CustomerHistory.timeline(state: history.state(), events: history.events, rules: testRules, until: Time.day(20))
        let pro = lines.filter { if case .entitlement(let name, _, _, _) = $0.change { return name == "pro" } else { return false } }
        #expect(pro.map(\.at) == [Time.day(2), Time.day(9)])
        #expect(pro.first?.cause == HistoryCause(kind: .grant, id: "g1", field: "from"))
        #expect(pro.last?.cause == HistoryCause(kind: .grant, id: "g1", field: "until"))
        let coins = lines.filter { if case .balance = $0.change { return true } else { return false } }
        #expect(coins.last?.at == Time.day(3))
        #expect(coins.last?.cause == HistoryCause(kind: .credit, id: "c1"))
        #expect(ChangeTimeline.nextChange(of: history.state(), rules: testRules, after: Time.day(4)) == Time.day(9))
    }

    @Test func creditsAddAndTakeFromTheirMomentOn() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        history.operate(Self.credit("c1", 50, at: Time.day(2)))
        history.operate(Self.credit("c2", -120, at: Time.day(3)))
        #expect(history.view(at: Time.day(1)).balance("coins") == 100)
        #expect(history.view(at: Time.day(2)).balance("coins") == 150)
        #expect(history.view(at: Time.day(3)).balance("coins") == 30)
        #expect(OperatorCheck.creditRefusal(currency: "coins", units: -31, balance: 30)?.code == "INSUFFICIENT_BALANCE")
        #expect(OperatorCheck.creditRefusal(currency: "coins", units: -30, balance: 30) == nil)
        #expect(OperatorCheck.creditRefusal(currency: "coins", units: 0, balance: 30)?.code == "INVALID_CREDIT")
    }

    @Test func theLatestLinkDecidesAndASecondUserIsATransfer() {
        let history = Self.subscribed()
        history.operate(Self.link("l2", to: "bob", at: Time.day(5)))
        history.operate(Self.link("l1", to: "alice", at: Time.day(2)))
        history.operate(Self.link("l3", to: "bob", at: Time.day(7)))
        let state = history.state()
        #expect(state.linkedAppUser?.appUserId == "bob")
        #expect(state.links.map(\.id) == ["l1", "l2", "l3"])
        let transfers = LifecycleEvents.all(state: state, events: history.events, rules: testRules).filter { $0.type == .transfer }
        #expect(transfers.map(\.id) == ["TRANSFER:l2"])
        #expect(transfers.first?.extra["from"] == "alice" && transfers.first?.extra["to"] == "bob")
        #expect(transfers.first?.effectiveAt == Time.day(5))
    }

    @Test func badInputIsRefusedPrecisely() {
        #expect(OperatorCheck.grantRefusal(entitlement: "pro", from: 10, until: 10, rules: testRules, force: false)?.code == "INVALID_GRANT")
        #expect(OperatorCheck.grantRefusal(entitlement: "pro", from: 10, until: 9, rules: testRules, force: false)?.code == "INVALID_GRANT")
        #expect(OperatorCheck.grantRefusal(entitlement: "prro", from: 1, until: 9, rules: testRules, force: false)?.code == "UNKNOWN_ENTITLEMENT")
        #expect(OperatorCheck.grantRefusal(entitlement: "prro", from: 1, until: 9, rules: testRules, force: true) == nil)
        #expect(OperatorCheck.unknownEntitlementWarning("prro", rules: testRules)?.hasPrefix("warning: entitlement prro") == true)
        #expect(OperatorCheck.appUserIdRefusal("")?.code == "INVALID_APP_USER_ID")
        #expect(OperatorCheck.appUserIdRefusal(String(repeating: "é", count: 129))?.code == "INVALID_APP_USER_ID")
        #expect(OperatorCheck.appUserIdRefusal(String(repeating: "a", count: 256)) == nil)
        #expect(OperatorCheck.idRefusal("")?.code == "INVALID_ID")
        #expect(OperatorCheck.idRefusal(String(repeating: "é", count: 129))?.code == "INVALID_ID")
        #expect(OperatorCheck.idRefusal(String(repeating: "a", count: 256)) == nil)
    }

    @Test func recordsRoundTripThroughTheirJSONAndTheCodecs() throws {
        let records = [
            Self.grant("g1", from: Time.day(1), until: Time.day(2)), Self.revoke("g1", at: Time.day(1) + 5),
            Self.credit("c1", -3, at: 7, key: OperatorRecord.appUserKey("alice")), Self.link("l1", to: "bob", at: 9, key: "otid:2000"),
        ]
        for record in records {
            #expect(OperatorRecord(json: record.canonicalJSON) == record)
            let event = Event(seq: 3, body: .operatorAction(record))
            #expect(try EventCodec.decode(EventCodec.encode(event), seq: 3) == event)
            #expect(event.kind == .operatorRecord(record.kind))
            #expect(event.customerKey == record.customerKey)
        }
        #expect(records[2].customerKey == "user:alice")
        #expect(records[3].customerKey == "otid:2000" && records[3].appUserId == "bob")
        // Another kind's JSON, or a tampered member, is not a record.
        let text = JSONWriter.string(records[0].canonicalJSON).replacingOccurrences(of: "\"kind\":\"grant\"", with: "\"kind\":\"credit\"")
        #expect(OperatorRecord(json: try JSONParser().parse(Array(text.utf8))) == nil)
        var state = CustomerState(key: Customer.app)
        for record in records { try state.apply(Event(seq: 1, body: .operatorAction(record)), rules: testRules) }
        #expect(try StateCodec.decode(StateCodec.encode(state)) == state)
    }
}
