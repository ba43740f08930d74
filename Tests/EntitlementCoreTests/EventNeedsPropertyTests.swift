import EntitlementCore
import Testing
import TestSupport

/// ``CustomerState/eventNeeds``: whenever the state says the derivations need none of
/// the customer's events, deriving the lifecycle and the revenue facts with no events
/// gives what deriving them with every event gives.
@Suite("Event needs: derivations without the events when the state says so")
struct EventNeedsPropertyTests {
    /// The generated history, with some events moved to Sandbox and some
    /// notifications turned into CONSUMPTION_REQUESTs, so that every reason to read
    /// the events occurs.
    static func history(seed: UInt64) -> [Event] {
        var events = RandomHistory.events(seed: seed)
        var rng = SplitMix64(seed: seed &* 31 &+ 7)
        let sandboxShare = rng.pick([0.0, 0.0, 0.05])
        for index in events.indices {
            if rng.chance(sandboxShare) { events[index].environment = .sandbox }
            if case .notification(var n) = events[index].body, n.transaction != nil, rng.chance(0.05) {
                n.type = .consumptionRequest
                n.subtype = nil
                events[index].body = .notification(n)
            }
        }
        return events
    }

    @Test(arguments: PropertySeeds.seeds(1...40))
    func derivationsWithoutEventsEqualDerivationsWithEvents(seed: UInt64) throws {
        let events = Self.history(seed: seed)
        for state in try reduceAll(events).values {
            #expect(state.eventNeeds != nil)
            guard !state.derivationsNeedEvents else { continue }
            let lifecycle = LifecycleEvents.all(state: state, events: events, rules: testRules)
            #expect(LifecycleEvents.all(state: state, events: [Event](), rules: testRules) == lifecycle, "\(state.key)")
            // Where account tokens name app users, their transfers as well.
            #expect(
                LifecycleEvents.all(state: state, events: [Event](), rules: testRules, accountTokenUsers: true)
                    == LifecycleEvents.all(state: state, events: events, rules: testRules, accountTokenUsers: true), "\(state.key)")
            #expect(
                RevenueFacts.derive(state: state, events: [], lifecycle: LifecycleEvents.all(state: state, events: [Event](), rules: testRules))
                    == RevenueFacts.derive(state: state, events: events, lifecycle: lifecycle), "\(state.key)")
        }
    }

    @Test("the histories hold customers of both kinds, and every reason to read the events")
    func historiesCoverBothKinds() throws {
        var needed = 0
        var notNeeded = 0
        var seen: EventNeeds = []
        var severalEnvironments = false
        for seed in 1...40 as ClosedRange<UInt64> {
            for state in try reduceAll(Self.history(seed: seed)).values {
                if state.derivationsNeedEvents { needed += 1 } else { notNeeded += 1 }
                seen.formUnion(state.eventNeeds ?? [])
                if state.environments.environments.count > 1 { severalEnvironments = true }
            }
        }
        #expect(needed > 10)
        #expect(notNeeded > 10)
        #expect(seen == [.revocations, .notices, .accountTokens])
        #expect(severalEnvironments)
    }

    @Test(arguments: PropertySeeds.seeds(41...46))
    func needsDoNotDependOnTheOrderOfArrival(seed: UInt64) throws {
        let events = Self.history(seed: seed)
        let reference = try reduceAll(events).mapValues(\.eventNeeds)
        var rng = SplitMix64(seed: seed &* 7919)
        for _ in 0..<5 {
            #expect(try reduceAll(rng.shuffledWithDuplicates(events)).mapValues(\.eventNeeds) == reference)
        }
    }

    @Test("the state codec keeps the needs; a state stored without them reads as unknown")
    func codec() throws {
        let events = Self.history(seed: 3)
        for state in try reduceAll(events).values {
            let bytes = StateCodec.encode(state)
            #expect(try StateCodec.decode(bytes).eventNeeds == state.eventNeeds)
            var unknown = state
            unknown.eventNeeds = nil
            let older = StateCodec.encode(unknown)
            #expect(older.count == bytes.count - 1)
            let decoded = try StateCodec.decode(older)
            #expect(decoded.eventNeeds == nil)
            #expect(decoded.derivationsNeedEvents)
            // Applying more events keeps it unknown.
            var next = decoded
            for event in events.prefix(5) { try? next.apply(event, rules: testRules) }
            #expect(next.eventNeeds == nil)
        }
    }
}
