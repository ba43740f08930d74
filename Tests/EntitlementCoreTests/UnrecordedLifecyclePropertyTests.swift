import EntitlementCore
import Testing
import TestSupport

/// ``LifecycleEvents/unrecorded(state:events:consumptionReasons:rules:now:isRecorded:)``,
/// which builds only the events due and not recorded yet, records what the whole
/// derivation (``LifecycleEvents/all(state:events:consumptionReasons:rules:)``) filtered
/// by the recorded ids records: data arriving in any order, with duplicates, a batch
/// at a time, time passing between batches.
@Suite("Lifecycle: only the unrecorded events built")
struct UnrecordedLifecyclePropertyTests {
    /// What recording keeps per customer: the hashes of the ids recorded.
    typealias Recorded = [CustomerKey: Set<UInt64>]

    /// The id hash is the FNV-1a hash of the id's UTF-8 bytes, whatever parts it is built from.
    @Test func theIdHashOfPartsIsTheHashOfTheText() {
        var parts = LifecycleIdHash()
        parts.add("EXPIRATION:")
        parts.add("2000000000000001")
        parts.add(":")
        parts.add(Int64(1_766_275_200_000))
        #expect(parts.value == LifecycleIdHash.of("EXPIRATION:2000000000000001:1766275200000"))
        for number: Int64 in [0, 7, 10, -1, -12_345, Int64.max, Int64.min] {
            var hash = LifecycleIdHash()
            hash.add(number)
            #expect(hash.value == LifecycleIdHash.of(String(number)), "\(number)")
        }
        // FNV-1a's published value for "a".
        #expect(LifecycleIdHash.of("a") == 0xaf63_dc4c_8601_ec8c)
    }

    @Test(arguments: PropertySeeds.seeds(1...24))
    func recordingTheUnrecordedEqualsFilteringTheWholeDerivation(seed: UInt64) throws {
        let events = EventNeedsPropertyTests.history(seed: seed)
        var rng = SplitMix64(seed: seed &* 6_151 &+ 3)
        for round in 0..<3 {
            let order = round == 0 ? events : rng.shuffledWithDuplicates(events)
            var incremental: Recorded = [:]
            var reference: Recorded = [:]
            var arrived: [Event] = []
            var now = Time.day(-30)
            var start = 0
            while start < order.count {
                let end = min(order.count, start + 1 + Int(rng.next() % 9))
                arrived += order[start..<end]
                start = end
                now += Int64(rng.next() % 20) * 86_400_000
                for (key, state) in try reduceAll(arrived) {
                    let known = incremental[key, default: []]
                    let unrecorded = LifecycleEvents.unrecorded(
                        state: state, events: arrived, rules: testRules, now: now, isRecorded: { known.contains($0) })
                    let all = LifecycleEvents.all(state: state, events: arrived, rules: testRules)
                    let expected = all.filter { $0.effectiveAt <= now && !reference[key, default: []].contains(LifecycleIdHash.of($0.id)) }
                    #expect(unrecorded.events == expected, "seed \(seed), round \(round), \(key) at \(now)")
                    #expect(unrecorded.nextDue == LifecycleEvents.nextDue(in: all, after: now))
                    #expect(unrecorded.turns.normalized == SubscriptionTurns(lifecycle: all).normalized)
                    #expect(
                        RevenueFacts.derive(state: state, events: arrived, turns: unrecorded.turns)
                            == RevenueFacts.derive(state: state, events: arrived, lifecycle: all))
                    incremental[key, default: []].formUnion(unrecorded.events.map { LifecycleIdHash.of($0.id) })
                    reference[key, default: []].formUnion(expected.map { LifecycleIdHash.of($0.id) })
                }
            }
            #expect(incremental == reference)
            // Once all data is in, every event of the whole data due by then is recorded.
            let late = Time.day(4_000)
            for (key, state) in try reduceAll(arrived) {
                let known = incremental[key, default: []]
                let unrecorded = LifecycleEvents.unrecorded(
                    state: state, events: arrived, rules: testRules, now: late, isRecorded: { known.contains($0) })
                let every = LifecycleEvents.all(state: state, events: arrived, rules: testRules).filter { $0.effectiveAt <= late }
                #expect(Set(every.map { LifecycleIdHash.of($0.id) }).isSubset(of: known.union(unrecorded.events.map { LifecycleIdHash.of($0.id) })))
            }
        }
    }

    /// Nothing recorded: every event due is built, in the whole derivation's order.
    @Test(arguments: PropertySeeds.seeds(30...37))
    func withNothingRecordedEveryDueEventIsBuilt(seed: UInt64) throws {
        let events = EventNeedsPropertyTests.history(seed: seed)
        for state in try reduceAll(events).values {
            for now in [Time.day(0), Time.day(40), Time.day(400)] {
                let all = LifecycleEvents.all(state: state, events: events, rules: testRules)
                let unrecorded = LifecycleEvents.unrecorded(state: state, events: events, rules: testRules, now: now, isRecorded: { _ in false })
                #expect(unrecorded.events == all.filter { $0.effectiveAt <= now })
                #expect(LifecycleEvents.turns(state: state, events: events).normalized == unrecorded.turns.normalized)
            }
        }
    }
}

extension SubscriptionTurns {
    /// The turns in one order (they come in no particular one).
    var normalized: SubscriptionTurns {
        func order(_ turns: [Turn]) -> [Turn] {
            turns.sorted { ($0.originalTransactionId, $0.at, $0.transactionId) < ($1.originalTransactionId, $1.at, $1.transactionId) }
        }
        var copy = self
        copy.conversions = order(conversions)
        copy.expirations = order(expirations)
        return copy
    }
}
