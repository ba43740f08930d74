import EntitlementCore
@testable import EventStore
import Testing
import TestSupport

/// Migration claims through the store (specification section 5.1): random subscriptions,
/// some migrated from others (chains, now and then a circle), their objects carrying an
/// appTransactionId or not (conflicting ones too, some signed in the same second),
/// appended in random orders and batches with duplicates. Who each customer is, and what
/// it holds, is what the core's ``CustomerLinks`` makes of the whole set; a replay
/// changes nothing.
@Suite struct MigrationClaimStoreTests {
    static let apps = ["app-1", "app-2"]
    static let received: Int64 = 1_700_000_100_000

    static func inputs(seed: UInt64) -> [VerifiedInput] {
        var rng = SplitMix64(seed: seed)
        let otids = (1...6).map { "100\($0)" }
        var inputs: [VerifiedInput] = []
        var number = 0
        for (index, otid) in otids.enumerated() {
            // Mostly from an earlier subscription, now and then from any; for a third of the
            // seeds the first two say each came from the other (a circle).
            let previous: String? =
                seed % 3 == 0 && index < 2
                ? otids[1 - index]
                : index > 0 && rng.chance(0.6) ? otids[rng.int(0..<index)] : rng.chance(0.15) ? otids[rng.int(0..<otids.count)] : nil
            for period in 0..<rng.int(1...3) {
                number += 1
                let purchase = 1_700_000_000_000 + Int64(index * 3 + period) * 86_400_000
                let transaction = StoreFixtures.transaction(
                    id: "t\(number)", original: otid, app: rng.chance(0.3) ? rng.pick(apps) : nil, purchase: purchase,
                    expires: purchase + 30 * 86_400_000, signed: purchase + Int64(rng.int(0...3)) * 1_000,
                    previous: previous == otid || (period > 0 && rng.chance(0.5)) ? nil : previous)
                inputs.append(rng.chance(0.3) ? StoreFixtures.notification(uuid: "n\(number)", transaction: transaction) : transaction)
            }
        }
        return inputs
    }

    /// Each customer's transaction ids.
    static func membership(_ states: [CustomerKey: CustomerState]) -> [CustomerKey: Set<String>] {
        states.mapValues { Set($0.transactions.keys) }
    }

    static func membership(of store: EventStore) throws -> [CustomerKey: Set<String>] {
        let keys = try store.connection.prepare("SELECT customer_key FROM projections ORDER BY customer_key")
        var result: [CustomerKey: Set<String>] = [:]
        while try keys.step() {
            let key = keys.string(0) ?? ""
            result[key] = Set(try store.projection(of: key)?.state.transactions.keys.map { $0 } ?? [])
        }
        return result
    }

    @Test(arguments: PropertySeeds.seeds(1...30))
    func theStoreFormsTheCustomersTheLinksMakeInAnyOrder(seed: UInt64) throws {
        let inputs = Self.inputs(seed: seed)
        let events = inputs.enumerated().map { Event(seq: Int64($0.offset + 1), input: $0.element) }
        let expected = Self.membership(try CustomerLinks.customers(of: events, rules: StoreFixtures.rules))
        var rng = SplitMix64(seed: seed &* 31 &+ 7)
        for round in 0..<4 {
            var order = inputs + inputs.filter { _ in rng.chance(0.2) }
            if round > 0 { rng.shuffle(&order) }
            let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
            var rest = order[...]
            while !rest.isEmpty {
                let batch = rest.prefix(rng.int(1...4))
                rest = rest.dropFirst(batch.count)
                _ = try store.append(
                    batch.map { .verified($0) }, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received)
            }
            #expect(try Self.membership(of: store) == expected, "seed \(seed), round \(round)")
            let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.received, collectDiff: false)
            #expect(report.changed == 0, "seed \(seed), round \(round)")
            #expect(try Self.membership(of: store) == expected, "seed \(seed), round \(round), after the replay")
        }
    }
}

extension MigrationClaimStoreTests {
    /// The generator makes what the test is about: migration claims that win, chains of
    /// them, circles, and ones a link to an appTransactionId outranks.
    @Test func theRandomSubscriptionsHoldMigrationChainsAndCircles() throws {
        var joined = 0, chained = 0, circles = 0, outranked = 0
        for seed in 1...30 as ClosedRange<UInt64> {
            let events = Self.inputs(seed: seed).enumerated().map { Event(seq: Int64($0.offset + 1), input: $0.element) }
            let links = try CustomerLinks(events)
            let claims = events.flatMap(\.linkClaims)
            for (otid, claim) in links.winners where claim.isMigration {
                joined += 1
                let previous = String(claim.appTransactionId.dropFirst(5))
                if links.winners[previous]?.isMigration == true { chained += 1 }
                if links.owner(ofOriginalTransactionId: otid) == "otid:" + otid { circles += 1 }
            }
            for claim in claims where claim.isMigration && links.winners[claim.originalTransactionId]?.isMigration == false { outranked += 1 }
        }
        #expect(joined >= 30 && chained >= 5 && circles >= 1 && outranked >= 30, "\([joined, chained, circles, outranked])")
    }
}
