import Testing

@testable import EntitlementCore

/// With `appUsers.fromAppAccountToken`, an `appAccountToken` names its customer's app
/// user (specification section 13): when signed data carries another token later, the
/// customer moves to that app user, a TRANSFER like an operator's second link.
@Suite struct AccountTokenTransferTests {
    static let tokenA = "7E3F0000-0000-4000-8000-00000000000A"
    static let tokenB = "7e3f0000-0000-4000-8000-00000000000b"

    /// A subscription bought under token A, renewed under token B on day 30, and a
    /// renewal info (day 40) under B again.
    static func history() -> History {
        let history = History()
        history.add(transaction("1000000000000001", original: Customer.otid, purchase: Time.t0, expires: Time.day(30), token: tokenA))
        history.add(
            transaction(
                "1000000000000002", original: Customer.otid, purchase: Time.day(30), expires: Time.day(60), signed: Time.day(30), token: tokenB))
        history.add(renewal(signed: Time.day(40), token: tokenB))
        return history
    }

    static func transfers(_ state: CustomerState, _ events: [Event], accountTokenUsers: Bool = true) -> [LifecycleEvent] {
        LifecycleEvents.all(state: state, events: events, rules: testRules, accountTokenUsers: accountTokenUsers).filter { $0.type == .transfer }
    }

    @Test func aNewTokenIsATransferAtTheSignedDateOfItsFirstClaim() {
        let history = Self.history()
        let transfers = Self.transfers(history.state(), history.events)
        #expect(transfers.map(\.id) == ["TRANSFER:token:\(Self.tokenB)@\(Time.day(30))"])
        #expect(transfers.first?.extra["from"] == .string(Self.tokenA.lowercased()))
        #expect(transfers.first?.extra["to"] == .string(Self.tokenB))
        #expect(transfers.first?.effectiveAt == Time.day(30))
        // Without fromAppAccountToken a token names nobody.
        #expect(Self.transfers(history.state(), history.events, accountTokenUsers: false).isEmpty)
    }

    @Test func theSameEventsInEveryOrderGiveTheSameTransfersAndNeeds() {
        let history = Self.history()
        let expected = Self.transfers(history.state(), history.events)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<12 {
            var shuffled = history.events.shuffled(using: &generator)
            shuffled += shuffled.prefix(Int.random(in: 0...2, using: &generator))
            var state = CustomerState(key: Customer.app)
            for event in shuffled { try? state.apply(event, rules: testRules) }
            #expect(state.eventNeeds?.contains(.accountTokens) == true)
            #expect(Self.transfers(state, shuffled) == expected)
        }
    }

    @Test func aTokenThatChangesOnlyInCaseMovesNobody() {
        let history = History()
        history.add(transaction("1000000000000001", original: Customer.otid, purchase: Time.t0, expires: Time.day(30), token: Self.tokenA))
        history.add(renewal(signed: Time.day(10), token: Self.tokenA.lowercased()))
        #expect(history.state().eventNeeds?.contains(.accountTokens) == false)
        #expect(Self.transfers(history.state(), history.events).isEmpty)
    }

    @Test func fromTheOperatorsFirstLinkTheLinkNamesTheAppUser() {
        let history = Self.history()
        // Linked on day 20, between the two tokens: from the token of then, and the later
        // token moves nobody.
        history.operate(OperatorActionTests.link("l1", to: "acct-1", at: Time.day(20)))
        let transfers = Self.transfers(history.state(), history.events)
        #expect(transfers.map(\.id) == ["TRANSFER:l1"])
        #expect(transfers.first?.extra["from"] == .string(Self.tokenA.lowercased()))
        #expect(transfers.first?.extra["to"] == "acct-1")

        // Linked after both: the token's change is a transfer, then the link from B.
        let later = Self.history()
        later.operate(OperatorActionTests.link("l1", to: "acct-1", at: Time.day(50)))
        let both = Self.transfers(later.state(), later.events)
        #expect(both.map(\.id) == ["TRANSFER:token:\(Self.tokenB)@\(Time.day(30))", "TRANSFER:l1"])
        #expect(both.last?.extra["from"] == .string(Self.tokenB))
    }

    @Test func claimsOfEqualSignedDateAreWonAsTheStateWinsThem() {
        let history = History()
        history.add(transaction("1000000000000001", original: Customer.otid, purchase: Time.t0, expires: Time.day(30), token: Self.tokenA))
        // Two claims on day 30, told apart by their raw JWS: the state's winner is the app user then.
        let other = "00000000-0000-4000-8000-000000000000"
        let renewed = renewal(signed: Time.day(30), token: Self.tokenB)
        let bought = transaction(
            "1000000000000002", original: Customer.otid, purchase: Time.day(30), expires: Time.day(60), signed: Time.day(30), token: other)
        history.add(renewed)
        history.add(bought)
        let state = history.state()
        let winner = renewed.jws.utf8Precedes(bought.jws) ? other : Self.tokenB
        #expect(state.accountToken?.token == winner)
        #expect(Self.transfers(state, history.events).map(\.id) == ["TRANSFER:token:\(winner)@\(Time.day(30))"])
    }

    @Test func anotherCustomersClaimsAmongTheEventsAreLeftOut() {
        let history = Self.history()
        let stranger = transaction(
            "5000000000000001", original: "5000000000000001", purchase: Time.day(45), signed: Time.day(45),
            token: "99999999-0000-4000-8000-000000000000", app: "704000000000000999")
        let events = history.events + [Event(seq: 99, input: .transaction(stranger))]
        #expect(Self.transfers(history.state(), events).map(\.id) == ["TRANSFER:token:\(Self.tokenB)@\(Time.day(30))"])
    }
}
