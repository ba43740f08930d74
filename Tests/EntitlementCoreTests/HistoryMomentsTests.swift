@testable import EntitlementCore
import Testing
import TestSupport

/// When an answer may change (the change feed's next-change search) is computed
/// without building the history's causes: it must be the very moments the full
/// history finds, for every generated history and at every moment asked.
@Suite struct HistoryMomentsTests {
    @Test(arguments: PropertySeeds.seeds(1...24))
    func momentsAloneAreTheHistorysMoments(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        let states = try reduceAll(events)
        #expect(!states.isEmpty)
        for (_, state) in states {
            for until in PropertyTests.moments + [Int64.max] {
                let full = HistorySources(state: state, events: events, rules: testRules, until: until).moments
                let bare = HistorySources(state: state, events: [Event](), rules: testRules, until: until, momentsOnly: true).moments
                #expect(bare == full, "seed \(seed) at \(until)")
            }
        }
    }

    /// Passes stacked and one revoked: their windows come from evaluations at each revocation.
    @Test func passWindowMomentsAreTheHistorysMoments() throws {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.pass, purchase: Time.t0))
        history.add(transaction("3000000000000002", product: Product.pass, purchase: Time.day(3)))
        history.add(transaction("3000000000000003", product: Product.pass, purchase: Time.day(4), revoked: Time.day(9)))
        let states = try reduceAll(history.events)
        #expect(!states.isEmpty)
        for (_, state) in states {
            for until in [Time.day(1), Time.day(8), Time.day(9), Time.day(30), Int64.max] {
                let full = HistorySources(state: state, events: history.events, rules: testRules, until: until).moments
                let bare = HistorySources(state: state, events: [Event](), rules: testRules, until: until, momentsOnly: true).moments
                #expect(bare == full, "at \(until)")
                #expect(!bare.isEmpty)
            }
        }
    }
}
