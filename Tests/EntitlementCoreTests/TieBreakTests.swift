import EntitlementCore
import Testing
import TestSupport

/// Two versions of one signed object with the same `signedDate`: the greater
/// raw JWS wins, and a reducer without the raws asks for them.
@Suite("Raw JWS tie-break")
struct TieBreakTests {
    static func transactionEvent(seq: Int64, expires: Int64, raw: String?) -> Event {
        let facts = TransactionFacts(
            transactionId: Customer.otid, originalTransactionId: Customer.otid, appTransactionId: Customer.app,
            productId: Product.monthly, type: .autoRenewable, purchaseDate: Time.t0, expiresDate: expires,
            signedDate: Time.day(1))
        return Event(seq: seq, body: .transaction(Signed(facts, ref: RawRef(eventSeq: seq, slot: .own), raw: raw)))
    }

    static func renewalFacts(autoRenew: Bool) -> RenewalFacts {
        RenewalFacts(
            originalTransactionId: Customer.otid, appTransactionId: Customer.app, productId: Product.monthly,
            autoRenewProductId: Product.monthly, autoRenewStatus: autoRenew, signedDate: Time.day(1))
    }

    @Test func greaterRawWinsInEitherOrder() throws {
        let low = Self.transactionEvent(seq: 1, expires: Time.day(30), raw: "eyJ.AAAA.sig")
        let high = Self.transactionEvent(seq: 2, expires: Time.day(31), raw: "eyJ.AAAB.sig")
        for order in [[low, high], [high, low], [high, low, high, low]] {
            let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
            #expect(state.transactions[Customer.otid]?.facts.expiresDate == Time.day(31))
            #expect(state.transactions[Customer.otid]?.ref == RawRef(eventSeq: 2, slot: .own))
        }
        // Plain byte order: "Z" (0x5A) sorts before "a" (0x61).
        let upper = Self.transactionEvent(seq: 3, expires: Time.day(40), raw: "eyJ.Z.sig")
        let lower = Self.transactionEvent(seq: 4, expires: Time.day(41), raw: "eyJ.a.sig")
        let state = try Reducer.reduce(key: Customer.app, events: [lower, upper], rules: testRules)
        #expect(state.transactions[Customer.otid]?.facts.expiresDate == Time.day(41))
    }

    /// A version of the transaction of ``transactionEvent(seq:expires:raw:)`` carrying `token`.
    static func tokenEvent(seq: Int64, token: String, raw: String?) -> Event {
        var event = transactionEvent(seq: seq, expires: Time.day(30) + seq, raw: raw)
        if case .transaction(var t) = event.body {
            t.facts.appAccountToken = token
            event.body = .transaction(t)
        }
        return event
    }

    @Test func theAccountTokenOfATieIsTheStandingVersions() throws {
        // Two versions of one transaction, signed in the same millisecond, with other tokens:
        // the greater raw is the version that stands, and its token the customer's.
        let low = Self.tokenEvent(seq: 1, token: "bbbbbbbb-0000-4000-8000-000000000000", raw: "eyJ.AAAA.sig")
        let high = Self.tokenEvent(seq: 2, token: "aaaaaaaa-0000-4000-8000-000000000000", raw: "eyJ.AAAB.sig")
        for order in [[low, high], [high, low], [high, low, high]] {
            let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
            #expect(state.transactions[Customer.otid]?.ref == RawRef(eventSeq: 2, slot: .own))
            #expect(state.accountToken?.token == "aaaaaaaa-0000-4000-8000-000000000000")
            #expect(state.eventNeeds?.contains(.accountTokens) == true)
        }
        // As stored, without raws: the reducer asks for both, changes nothing, and decides
        // once they are at hand.
        let stored = try StateCodec.decode(StateCodec.encode(try Reducer.reduce(key: Customer.app, events: [low], rules: testRules)))
        var event = try EventCodec.decode(EventCodec.encode(high), seq: 2)
        var state = stored
        #expect(throws: MissingRawJWS(refs: [RawRef(eventSeq: 1, slot: .own), RawRef(eventSeq: 2, slot: .own)])) {
            try state.apply(event, rules: testRules)
        }
        #expect(state == stored)
        let raws = [RawRef(eventSeq: 1, slot: .own): "eyJ.AAAA.sig", RawRef(eventSeq: 2, slot: .own): "eyJ.AAAB.sig"]
        state.hydrate(raws)
        event.hydrate(raws)
        try state.apply(event, rules: testRules)
        #expect(state.accountToken?.token == "aaaaaaaa-0000-4000-8000-000000000000")
    }

    @Test func rawComparisonIsByteOrderAtAnyLength() throws {
        var rng = SplitMix64(seed: 77)
        let alphabet: [String] = ["a", "b", "Z", "0", ".", "-", "é", "\u{10FFFF}"]
        for _ in 0..<2_000 {
            let prefix = String(repeating: "eyJhbGciOiJFUzI1NiJ9", count: rng.index(4))
            let left = prefix + (0..<rng.index(20)).map { _ in rng.pick(alphabet) }.joined()
            let right = prefix + (0..<rng.index(20)).map { _ in rng.pick(alphabet) }.joined()
            guard left != right else { continue }
            let expected = Array(left.utf8).lexicographicallyPrecedes(Array(right.utf8)) ? Time.day(31) : Time.day(30)
            let a = Self.transactionEvent(seq: 1, expires: Time.day(30), raw: left)
            let b = Self.transactionEvent(seq: 2, expires: Time.day(31), raw: right)
            for order in [[a, b], [b, a]] {
                let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
                #expect(state.transactions[Customer.otid]?.facts.expiresDate == expected)
            }
        }
    }

    @Test func laterSignedDateWinsWithoutRaws() throws {
        let early = Self.transactionEvent(seq: 1, expires: Time.day(30), raw: nil)
        var late = Self.transactionEvent(seq: 2, expires: Time.day(37), raw: nil)
        if case .transaction(var t) = late.body {
            t.facts.signedDate = Time.day(2)
            late.body = .transaction(t)
        }
        for order in [[early, late], [late, early]] {
            let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
            #expect(state.transactions[Customer.otid]?.facts.expiresDate == Time.day(37))
        }
    }

    @Test func sameContentTwiceIsOrderedByRawThenByPosition() throws {
        let first = Self.transactionEvent(seq: 1, expires: Time.day(30), raw: nil)
        let copy = Self.transactionEvent(seq: 5, expires: Time.day(30), raw: nil)
        // The same event applied again needs nothing.
        let once = try Reducer.reduce(key: Customer.app, events: [first, first], rules: testRules)
        #expect(once.transactions[Customer.otid]?.ref.eventSeq == 1)
        // Equal facts under two refs: the raws decide (the same content may be signed twice).
        var state = once
        #expect(throws: MissingRawJWS(refs: [RawRef(eventSeq: 1, slot: .own), RawRef(eventSeq: 5, slot: .own)])) {
            try state.apply(copy, rules: testRules)
        }
        // The same JWS twice: the copy logged first is kept, whatever the order.
        let same = [RawRef(eventSeq: 1, slot: .own): "eyJ.SAME.sig", RawRef(eventSeq: 5, slot: .own): "eyJ.SAME.sig"]
        var a = first, b = copy
        a.hydrate(same)
        b.hydrate(same)
        let forward = try Reducer.reduce(key: Customer.app, events: [a, b], rules: testRules)
        let backward = try Reducer.reduce(key: Customer.app, events: [b, a], rules: testRules)
        #expect(forward.transactions[Customer.otid]?.ref.eventSeq == 1)
        #expect(backward.transactions[Customer.otid]?.ref.eventSeq == 1)
        #expect(StateCodec.encode(forward) == StateCodec.encode(backward))
        // Re-signed: the greater raw is kept, whatever the order.
        let resigned = [RawRef(eventSeq: 1, slot: .own): "eyJ.AAAA.sig", RawRef(eventSeq: 5, slot: .own): "eyJ.BBBB.sig"]
        a.hydrate(resigned)
        b.hydrate(resigned)
        for order in [[a, b], [b, a]] {
            #expect(try Reducer.reduce(key: Customer.app, events: order, rules: testRules).transactions[Customer.otid]?.ref.eventSeq == 5)
        }
    }

    @Test func missingRawIsThrownAndHydrateResolvesIt() throws {
        let raws: [RawRef: String] = [
            RawRef(eventSeq: 1, slot: .own): "eyJ.BBBB.sig",
            RawRef(eventSeq: 2, slot: .own): "eyJ.AAAA.sig",
        ]
        // As stored: the state and the event without their raws.
        let stored = try StateCodec.decode(
            StateCodec.encode(try Reducer.reduce(_: CustomerState(key: Customer.app), Self.transactionEvent(seq: 1, expires: Time.day(30), raw: "eyJ.BBBB.sig"), rules: testRules)))
        #expect(stored.transactions[Customer.otid]?.raw == nil)
        var event = try EventCodec.decode(
            EventCodec.encode(Self.transactionEvent(seq: 2, expires: Time.day(31), raw: "eyJ.AAAA.sig")), seq: 2)

        var state = stored
        #expect(throws: MissingRawJWS(refs: Set(raws.keys))) { try state.apply(event, rules: testRules) }
        // Atomic: nothing changed.
        #expect(state == stored)
        #expect(StateCodec.encode(state) == StateCodec.encode(stored))

        // Only the event's raw at hand: only the state's is named.
        var partly = event
        partly.hydrate(raws)
        #expect(throws: MissingRawJWS(refs: [RawRef(eventSeq: 1, slot: .own)])) { try state.apply(partly, rules: testRules) }

        state.hydrate(raws)
        event.hydrate(raws)
        #expect(state.transactions[Customer.otid]?.raw == "eyJ.BBBB.sig")
        try state.apply(event, rules: testRules)
        // "eyJ.BBBB" > "eyJ.AAAA": the stored version stays.
        #expect(state.transactions[Customer.otid]?.facts.expiresDate == Time.day(30))
    }

    @Test func aNotificationWithTwoTiesThrowsOnceAndChangesNothing() throws {
        var state = CustomerState(key: Customer.app)
        let first = Event(
            seq: 1,
            body: .notification(
                NotificationFacts(
                    notificationUUID: "n-1", type: .subscribed, subtype: .initialBuy, signedDate: Time.day(1),
                    transaction: Self.transactionEvent(seq: 1, expires: Time.day(30), raw: nil).transactionSigned(slot: .nestedTransaction),
                    renewalInfo: Signed(Self.renewalFacts(autoRenew: true), ref: RawRef(eventSeq: 1, slot: .nestedRenewalInfo)))))
        try state.apply(first, rules: testRules)
        let before = state

        let second = Event(
            seq: 2,
            body: .notification(
                NotificationFacts(
                    notificationUUID: "n-2", type: .didChangeRenewalStatus, subtype: .autoRenewDisabled,
                    signedDate: Time.day(2),
                    transaction: Self.transactionEvent(seq: 2, expires: Time.day(31), raw: "eyJ.X.sig").transactionSigned(slot: .nestedTransaction),
                    renewalInfo: Signed(Self.renewalFacts(autoRenew: false), ref: RawRef(eventSeq: 2, slot: .nestedRenewalInfo), raw: "eyJ.Y.sig"),
                    appTransaction: Signed(
                        AppTransactionFacts(appTransactionId: Customer.app, signedDate: Time.day(2)),
                        ref: RawRef(eventSeq: 2, slot: .nestedAppTransaction), raw: "eyJ.Z.sig"))))
        #expect(throws: MissingRawJWS(refs: [RawRef(eventSeq: 1, slot: .nestedTransaction), RawRef(eventSeq: 1, slot: .nestedRenewalInfo)])) {
            try state.apply(second, rules: testRules)
        }
        #expect(state == before)
        #expect(state.lastNotification?.notificationUUID == "n-1")
        #expect(state.appTransaction == nil)

        state.hydrate([
            RawRef(eventSeq: 1, slot: .nestedTransaction): "eyJ.A.sig", RawRef(eventSeq: 1, slot: .nestedRenewalInfo): "eyJ.Z.sig",
        ])
        try state.apply(second, rules: testRules)
        #expect(state.transactions[Customer.otid]?.facts.expiresDate == Time.day(31))  // "X" > "A"
        #expect(state.renewalInfos[Customer.otid]?.map(\.facts.autoRenewStatus) == [true])  // "Z" > "Y"
        #expect(state.appTransaction?.facts.signedDate == Time.day(2))
        #expect(state.lastNotification?.notificationUUID == "n-2")
    }

    @Test func anAccountTokenTieBetweenTwoObjectsTakesTheGreaterRaw() throws {
        let a = TransactionFacts(
            transactionId: "1", originalTransactionId: "1", appTransactionId: Customer.app, productId: Product.coins,
            type: .consumable, purchaseDate: Time.t0, signedDate: Time.t0, appAccountToken: "aaaa")
        var b = a
        b.transactionId = "2"
        b.originalTransactionId = "2"
        b.appAccountToken = "bbbb"
        // The smaller token in the greater raw: the raw decides, not the token.
        let events = [
            Event(seq: 1, body: .transaction(Signed(a, ref: RawRef(eventSeq: 1, slot: .own), raw: "eyJ.B.sig"))),
            Event(seq: 2, body: .transaction(Signed(b, ref: RawRef(eventSeq: 2, slot: .own), raw: "eyJ.A.sig"))),
        ]
        for order in [events, events.reversed()] {
            let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
            #expect(state.accountToken?.token == "aaaa")
        }
        // The same token from two objects needs no raw: the smaller ref stands.
        var c = b
        c.appAccountToken = "aaaa"
        let same = [events[0], Event(seq: 2, body: .transaction(Signed(c, ref: RawRef(eventSeq: 2, slot: .own))))]
        for order in [same, same.reversed()] {
            let state = try Reducer.reduce(key: Customer.app, events: order, rules: testRules)
            #expect(state.accountToken?.ref == RawRef(eventSeq: 1, slot: .own))
        }
    }
}

extension Event {
    /// The event's transaction, moved to `slot` (to nest it in a notification).
    func transactionSigned(slot: RawRef.Slot) -> Signed<TransactionFacts> {
        guard case .transaction(var signed) = body else { fatalError("not a transaction event") }
        signed.ref = RawRef(eventSeq: signed.ref.eventSeq, slot: slot)
        return signed
    }
}
