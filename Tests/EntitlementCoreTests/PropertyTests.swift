import EntitlementCore
import Testing
import TestSupport

/// State is a pure function of the *set* of events: any order, any duplicates.
@Suite("Order independence")
struct PropertyTests {
    /// Moments at which evaluations are compared.
    static let moments: [Int64] = [
        Time.t0 - 1, Time.day(3), Time.day(15) + 7, Time.day(33), Time.day(61), Time.day(95), Time.day(400),
    ]

    @Test(arguments: PropertySeeds.seeds(1...24))
    func permutationsWithDuplicatesGiveEqualStates(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        let reference = try reduceAll(events)
        #expect(!reference.isEmpty)
        var rng = SplitMix64(seed: seed &* 7919)
        for _ in 0..<25 {
            let permuted = rng.shuffledWithDuplicates(events)
            let states = try reduceAll(permuted)
            #expect(states == reference)
            for (key, state) in states {
                // Equal bytes: the refs kept are the same too.
                #expect(StateCodec.encode(state) == StateCodec.encode(reference[key]!))
                for at in Self.moments {
                    #expect(
                        Evaluation.evaluate(state, rules: testRules, at: at)
                            == Evaluation.evaluate(reference[key]!, rules: testRules, at: at))
                }
            }
        }
    }

    @Test("the random histories hold migrated subscriptions that join an otid: customer and ones that join a linked customer")
    func historiesHoldMigrations() throws {
        var migrationWinners = 0
        var joinedAnOtidCustomer = 0
        var linkedThroughMigration = 0
        for seed in 1...24 as ClosedRange<UInt64> {
            let links = try CustomerLinks(RandomHistory.events(seed: seed))
            for (otid, claim) in links.winners where claim.isMigration {
                migrationWinners += 1
                let owner = links.owner(ofOriginalTransactionId: otid)
                if owner.hasPrefix("otid:") { joinedAnOtidCustomer += 1 } else { linkedThroughMigration += 1 }
            }
        }
        #expect(migrationWinners >= 10)
        #expect(joinedAnOtidCustomer >= 1)
        #expect(linkedThroughMigration >= 5)
    }

    @Test(arguments: PropertySeeds.seeds(100...111))
    func replayWithoutRawsHydratingOnDemandGivesTheIngestState(seed: UInt64) throws {
        // Events as replay reads them: facts from the codec, raws left in the log.
        let events = RandomHistory.events(seed: seed)
        let log = ReplayFromLog.raws(of: events)
        let stripped = try events.map { event throws(CodecError) in try EventCodec.decode(EventCodec.encode(event), seq: event.seq) }
        let reference = try reduceAll(events)

        let links = try CustomerLinks(events)
        var rng = SplitMix64(seed: seed)
        var loads = 0
        for round in 0..<6 {
            let order = round == 0 ? stripped : rng.shuffledWithDuplicates(stripped)
            var states: [CustomerKey: CustomerState] = [:]
            for original in order {
                guard let key = links.owner(of: original) else { continue }
                var state = states[key] ?? CustomerState(key: key)
                // Stored between events, as the projection store does: raws dropped.
                state = try StateCodec.decode(StateCodec.encode(state))
                loads += try ReplayFromLog.apply(original, to: &state, rules: testRules, log: log)
                states[key] = state
            }
            #expect(states == reference)
            for (key, state) in states {
                #expect(StateCodec.encode(state) == StateCodec.encode(reference[key]!))
            }
        }
        #expect(loads > 0, "the history should need raws to break some ties")
    }

    @Test func generatedHistoriesExerciseTies() throws {
        // The generator really produces same-millisecond versions with different facts.
        var ties = 0
        for seed in 1...24 as ClosedRange<UInt64> {
            let events = RandomHistory.events(seed: seed)
            var seen: [String: Set<TransactionFacts>] = [:]
            for event in events {
                let transaction: Signed<TransactionFacts>?
                switch event.body {
                case .notification(let n): transaction = n.transaction
                case .transaction(let t): transaction = t
                case .renewalInfo, .appTransaction, .receipt, .usage, .operatorAction: transaction = nil
                }
                guard let transaction else { continue }
                seen["\(transaction.facts.transactionId)@\(transaction.facts.signedDate)", default: []].insert(transaction.facts)
            }
            ties += seen.values.filter { $0.count > 1 }.count
        }
        #expect(ties > 10)
    }

    @Test func generatedHistoriesExerciseCommitmentsAndAdvancedCommerce() throws {
        // Months of 12-month commitments (some cancelled), Advanced Commerce items (some revoked).
        var months = 0, cancelled = 0, items = 0, itemRefunds = 0
        for seed in 1...24 as ClosedRange<UInt64> {
            let events = RandomHistory.events(seed: seed)
            for (_, state) in try reduceAll(events) {
                months += state.transactions.values.filter { $0.facts.isCommitmentMonth }.count
                items += state.transactions.values.compactMap { $0.facts.extensions?.items?.count }.reduce(0, +)
                for event in LifecycleEvents.all(state: state, events: events, rules: testRules) {
                    if event.extra["commitment"] == .bool(true) { cancelled += 1 }
                    if event.extra["sku"] != nil { itemRefunds += 1 }
                }
            }
        }
        #expect(months > 20)
        #expect(cancelled > 3)
        #expect(items > 4)
        #expect(itemRefunds > 2)
    }

    @Test func generatedHistoriesExerciseLinks() throws {
        // Legacy objects that merge into their appTransactionId, otid: customers that
        // stay apart, and conflicting links, some of them in the same millisecond.
        var merged = 0, apart = 0, conflicts = 0, sameMillisecond = 0
        for seed in 1...24 as ClosedRange<UInt64> {
            let events = RandomHistory.events(seed: seed)
            let links = try CustomerLinks(events)
            var claims: [String: [LinkClaim]] = [:]
            for event in events { for claim in event.linkClaims { claims[claim.originalTransactionId, default: []].append(claim) } }
            for event in events where event.customerKey?.hasPrefix("otid:") == true {
                if links.owner(of: event)?.hasPrefix("otid:") == true { apart += 1 } else { merged += 1 }
            }
            for list in claims.values where Set(list.map(\.appTransactionId)).count > 1 {
                conflicts += 1
                let latest = list.map(\.signedDate).max()!
                if Set(list.filter { $0.signedDate == latest }.map(\.appTransactionId)).count > 1 { sameMillisecond += 1 }
            }
        }
        #expect(merged > 20)
        #expect(apart > 5)
        #expect(conflicts > 5)
        #expect(sameMillisecond > 0)
    }

    @Test func theLatestLinkDecidesThenTheGreaterRawInAnyOrder() throws {
        func claim(_ app: String, _ signed: Int64, _ seq: Int64, _ raw: String) -> LinkClaim {
            LinkClaim(originalTransactionId: "2000", appTransactionId: app, signedDate: signed, ref: RawRef(eventSeq: seq, slot: .own), raw: raw)
        }
        let claims = [claim("7001", 5, 1, "b"), claim("7002", 9, 2, "a"), claim("7003", 9, 3, "c"), claim("7001", 9, 4, "b")]
        var rng = SplitMix64(seed: 5)
        for _ in 0..<20 {
            var links = CustomerLinks()
            for claim in claims.shuffled(using: &rng) + [claims[0]] { try links.add(claim) }
            #expect(links.resolve("otid:2000") == "7003")
            #expect(links.resolve("otid:9999") == "otid:9999")
            #expect(links.resolve("7001") == "7001")
        }
        var missing = CustomerLinks()
        try missing.add(claim("7001", 9, 1, "b"))
        #expect(throws: MissingRawJWS.self) {
            try missing.add(LinkClaim(originalTransactionId: "2000", appTransactionId: "7002", signedDate: 9, ref: RawRef(eventSeq: 2, slot: .own)))
        }
    }

    @Test func generatedHistoriesExerciseOperatorActions() throws {
        // Grants (revoked or not), credits, links that transfer a customer, records given
        // to an app user itself, and records filed under an otid: key that merges.
        var grants = 0, revoked = 0, credits = 0, transfers = 0, ownRecords = 0, mergedRecords = 0
        for seed in 1...24 as ClosedRange<UInt64> {
            let events = RandomHistory.events(seed: seed)
            let links = try CustomerLinks(events)
            for event in events {
                guard case .operatorAction(let record) = event.body else { continue }
                switch record.action {
                case .grant: grants += 1
                case .grantRevoked: revoked += 1
                case .credit: credits += 1
                case .link: break
                }
                if OperatorRecord.appUser(ofKey: record.customerKey) != nil { ownRecords += 1 }
                if record.originalTransactionId != nil, links.owner(of: event)?.hasPrefix("otid:") == false { mergedRecords += 1 }
            }
            for state in try reduceAll(events).values {
                let users = state.links.compactMap(\.appUserId)
                transfers += zip(users, users.dropFirst()).filter { $0 != $1 }.count
            }
        }
        #expect(grants > 20)
        #expect(revoked > 5)
        #expect(credits > 20)
        #expect(transfers > 3)
        #expect(ownRecords > 5)
        #expect(mergedRecords > 0)
    }

    @Test(arguments: PropertySeeds.seeds(1...12))
    func operatorRecordsSurviveTheCodecsAndGiveEqualAnswersInAnyOrder(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        let reference = try reduceAll(events)
        var rng = SplitMix64(seed: seed &+ 99)
        // Operator records as replay reads them (through the event codec); signed events keep their raws.
        let decoded = try rng.shuffledWithDuplicates(events).map { event throws(CodecError) in
            guard case .operatorAction = event.body else { return event }
            return try EventCodec.decode(EventCodec.encode(event), seq: event.seq)
        }
        for (key, state) in reference where !state.operatorRecords.isEmpty {
            let bytes = StateCodec.encode(state)
            #expect(try StateCodec.decode(bytes).operatorRecords == state.operatorRecords)
            for at in Self.moments {
                let view = Evaluation.evaluate(state, rules: testRules, at: at)
                let fromBytes = try bytes.withUnsafeBytes { buffer throws(CodecError) in
                    try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at)
                }
                #expect(fromBytes == view, "\(key) at \(at)")
            }
        }
        let links = try CustomerLinks(decoded)
        var states: [CustomerKey: CustomerState] = [:]
        for event in decoded {
            guard let key = links.owner(of: event) else { continue }
            try states[key, default: CustomerState(key: key)].apply(event, rules: testRules)
        }
        for (key, state) in reference where !state.operatorRecords.isEmpty {
            #expect(states[key]?.operatorRecords == state.operatorRecords, "\(key)")
        }
    }
}
