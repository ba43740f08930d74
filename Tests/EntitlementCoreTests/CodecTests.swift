import EntitlementCore
import Testing
import TestSupport

@Suite("Codecs")
struct CodecTests {
    /// Every field of the state that `==` does not compare: the refs.
    static func refs(_ state: CustomerState) -> [String] {
        var refs: [String] = []
        for (id, version) in state.transactions.sorted(by: { $0.key < $1.key }) { refs.append("t \(id) \(version.ref)") }
        for (id, versions) in state.renewalInfos.sorted(by: { $0.key < $1.key }) {
            for version in versions { refs.append("r \(id) \(version.ref)") }
        }
        refs.append("a \(String(describing: state.appTransaction?.ref))")
        refs.append("k \(String(describing: state.accountToken?.ref))")
        return refs
    }

    static func randomStates(seeds: ClosedRange<UInt64>) throws -> [CustomerState] {
        var states: [CustomerState] = []
        for seed in seeds { states.append(contentsOf: try reduceAll(RandomHistory.events(seed: seed)).values) }
        return states
    }

    /// The query path decodes only what evaluation at the moment asked about reads
    /// (no dictionaries; of the renewal info versions only the one standing then):
    /// its answer is the answer of the whole state.
    @Test func evaluatingStoredBytesEqualsEvaluatingTheWholeState() throws {
        let states = try Self.randomStates(seeds: 1...30)
        var rng = SplitMix64(seed: 77)
        var severalVersions = 0
        for state in states {
            let bytes = StateCodec.encode(state)
            if state.renewalInfos.values.contains(where: { $0.count > 1 }) { severalVersions += 1 }
            for _ in 0..<6 {
                let at = Time.day(rng.int(-5...200)) + rng.int(0...Time.day)
                let fromBytes = try bytes.withUnsafeBytes { buffer throws(CodecError) in
                    try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at)
                }
                #expect(fromBytes == Evaluation.evaluate(state, rules: testRules, at: at))
            }
        }
        #expect(severalVersions > 10)
        // Damage in a version it reads past is still refused when it breaks the order.
        for state in states where (state.renewalInfos.values.first?.count ?? 0) > 1 {
            var versions = state.renewalInfos.values.first!
            let key = versions[0].facts.originalTransactionId
            versions[1].facts.originalTransactionId = key + "x"
            var broken = state
            broken.renewalInfos[key] = versions
            let bytes = StateCodec.encode(broken)
            #expect(throws: CodecError.self) { try Self.evaluateForMoment(bytes) }
            break
        }
    }

    /// The query path reads each subscription's periods as heads and builds only the
    /// current one: a downgraded period read past still names its product's
    /// entitlements (inactive), an upgrade bought later takes over, and periods bought
    /// after the moment count for nothing; every answer is the whole state's.
    @Test func periodsReadPastStillNameTheirEntitlements() throws {
        let history = History()
        // Premium for a month, then the cheaper product from the renewal on.
        history.add(transaction(Customer.otid, product: Product.premium, purchase: Time.t0, expires: Time.day(30)))
        history.add(transaction("2000000000000002", original: Customer.otid, purchase: Time.day(30), expires: Time.day(60)))
        history.add(transaction("2000000000000003", original: Customer.otid, purchase: Time.day(60), expires: Time.day(90)))
        // A second subscription: basic, upgraded to yearly on day 20 (in the millisecond of a renewal of basic).
        let second = "2000000000000100"
        history.add(transaction(second, product: Product.basic, purchase: Time.day(5), expires: Time.day(35), upgraded: true))
        history.add(transaction("2000000000000101", original: second, product: Product.yearly, purchase: Time.day(20), expires: Time.day(385)))
        history.add(transaction("2000000000000102", original: second, product: Product.basic, purchase: Time.day(20), expires: Time.day(21), upgraded: true))
        let state = history.state()
        let bytes = StateCodec.encode(state)
        func evaluated(at: Int64) throws -> CustomerView {
            try bytes.withUnsafeBytes { buffer throws(CodecError) in try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at) }
        }
        for days: Int64 in [-1, 0, 4, 5, 10, 20, 29, 30, 31, 45, 55, 60, 61, 95] {
            let at = Time.day(days)
            #expect(try evaluated(at: at) == Evaluation.evaluate(state, rules: testRules, at: at), "day \(days)")
        }
        let later = try evaluated(at: Time.day(55))
        #expect(later.entitlement("premium")?.active == false)
        #expect(later.isActive("pro"))
        #expect(later.subscriptions.map(\.currentTransactionId) == ["2000000000000002", "2000000000000101"])
        #expect(later.subscriptions.map(\.productId) == [Product.monthly, Product.yearly])
        // Before any period was bought, nothing is named.
        #expect(try evaluated(at: Time.day(-1)).entitlements.isEmpty)
    }

    /// Renewal info versions the query path reads past carry every extension Apple signs
    /// (price increase, renewal price and currency, win-back offers, billing plan, a
    /// commitment, a previous original transaction): read past, they leave the answer and
    /// the checks as the whole decode has them.
    @Test func versionsReadPastWithEveryRenewalExtension() throws {
        func version(signed: Int64, price: Int64, commitmentAutoRenew: Bool) -> SignedRenewalInfo {
            renewal(
                priceIncreaseStatus: 1, signed: signed,
                extra: [
                    ("renewalBillingPlanType", json("MONTHLY")), ("renewalPrice", json(price)), ("currency", json("EUR")),
                    ("eligibleWinBackOfferIds", .array([.string("winback-\(price)"), .string("winback-2")])),
                    ("previousOriginalTransactionId", json("2000000000000001")),
                    (
                        "commitmentInfo",
                        object([
                            ("commitmentAutoRenewProductId", json(Product.monthly)),
                            ("commitmentAutoRenewStatus", json(Int64(commitmentAutoRenew ? 1 : 0))),
                            ("commitmentRenewalBillingPlanType", json("MONTHLY")), ("commitmentRenewalDate", json(Time.day(360))),
                            ("commitmentRenewalPrice", json(price * 12)),
                        ])
                    ),
                ])
        }
        func history(firstCommitmentAutoRenew: Bool) -> History {
            let history = History()
            history.add(transaction(Customer.otid, purchase: Time.t0, expires: Time.day(30)))
            history.add(version(signed: Time.day(1), price: 9990, commitmentAutoRenew: firstCommitmentAutoRenew))
            history.add(version(signed: Time.day(10), price: 10990, commitmentAutoRenew: false))
            history.add(version(signed: Time.day(20), price: 11990, commitmentAutoRenew: true))
            return history
        }
        let state = history(firstCommitmentAutoRenew: true).state()
        #expect(state.renewalInfos[Customer.otid]?.count == 3)
        let bytes = StateCodec.encode(state)
        #expect(bytes.first == StateCodec.formatVersionWithExtensions)
        func evaluated(_ bytes: [UInt8], at: Int64) throws -> CustomerView {
            try bytes.withUnsafeBytes { buffer throws(CodecError) in try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at) }
        }
        // Each version in turn is the standing one; the others are read past.
        for at in [Time.day(0), Time.day(5), Time.day(15), Time.day(25), Time.day(40)] {
            #expect(try evaluated(bytes, at: at) == Evaluation.evaluate(state, rules: testRules, at: at), "at \(at)")
        }

        // Flags that say the commitment auto-renews without saying its status is known are
        // refused in a version read past, as in the one built. The two encodings differ in
        // the first version's commitment flags alone; its auto-renew bit, alone, contradicts.
        let off = StateCodec.encode(history(firstCommitmentAutoRenew: false).state())
        #expect(off.count == bytes.count)
        let differing = (0..<bytes.count).filter { bytes[$0] != off[$0] }
        try #require(differing.count == 1)
        var contradictory = bytes
        contradictory[differing[0]] = bytes[differing[0]] ^ off[differing[0]]
        for at in [Time.day(15), Time.day(25)] {
            do {
                _ = try evaluated(contradictory, at: at)
                Issue.record("contradictory commitment flags were accepted at \(at)")
            } catch let error as CodecError {
                #expect(error.code == .invalidTag && error.offset == differing[0], "\(error)")
            } catch {
                Issue.record("not a CodecError: \(error)")
            }
        }
        #expect(throws: CodecError.self) { try StateCodec.decode(contradictory) }
    }

    @Test func stateRoundTrips() throws {
        let states = try Self.randomStates(seeds: 1...30)
        #expect(states.count > 60)
        for state in states {
            let bytes = StateCodec.encode(state)
            // A state with operator records has their fields; an app user's own state holds nothing else.
            if !state.operatorRecords.isEmpty {
                #expect(bytes.first == StateCodec.formatVersionWithOperatorFields)
            } else {
                #expect(!state.key.hasPrefix("user:"))
                #expect(bytes.first == StateCodec.formatVersion || bytes.first == StateCodec.formatVersionWithExtensions)
            }
            let decoded = try StateCodec.decode(bytes)
            #expect(decoded == state)
            #expect(decoded.key == state.key)
            #expect(decoded.accountToken?.token == state.accountToken?.token)
            #expect(decoded.lastNotification == state.lastNotification)
            #expect(Self.refs(decoded) == Self.refs(state))
            // Raws are not stored: every version needs its raw again.
            let versions = state.transactions.count + state.renewalInfos.values.map(\.count).reduce(0, +)
            #expect(decoded.refsMissingRaw.count == versions + (state.appTransaction == nil ? 0 : 1))
            #expect(StateCodec.encode(decoded) == bytes)
            // The other overloads read the same bytes.
            #expect(try bytes.withUnsafeBytes { buffer throws(CodecError) in try StateCodec.decode(buffer) } == state)
            #expect(try StateCodec.decode(bytes[...]) == state)
        }
    }

    @Test func equalStatesGiveEqualBytesWhateverTheInsertionOrder() throws {
        let events = RandomHistory.events(seed: 42)
        let reference = try reduceAll(events)
        var rebuilt: [CustomerKey: CustomerState] = [:]
        for (key, state) in reference {
            var copy = CustomerState(key: key)
            for (id, version) in state.transactions.reversed() { copy.transactions[id] = version }
            for (id, versions) in state.renewalInfos.reversed() { copy.renewalInfos[id] = versions }
            copy.appTransaction = state.appTransaction
            copy.accountToken = state.accountToken
            copy.lastNotification = state.lastNotification
            copy.environments = state.environments
            copy.eventNeeds = state.eventNeeds
            for (id, usage) in state.usages.reversed() { copy.usages[id] = usage }
            for (id, record) in state.operatorRecords.reversed() { copy.operatorRecords[id] = record }
            rebuilt[key] = copy
        }
        for key in reference.keys {
            #expect(StateCodec.encode(rebuilt[key]!) == StateCodec.encode(reference[key]!))
        }
    }

    @Test func eventRoundTrips() throws {
        for seed in 1...30 as ClosedRange<UInt64> {
            for event in RandomHistory.events(seed: seed) {
                let bytes = EventCodec.encode(event)
                let decoded = try EventCodec.decode(bytes, seq: event.seq)
                #expect(decoded == event)
                #expect(decoded.seq == event.seq)
                #expect(decoded.refs == event.refs)
                #expect(decoded.customerKey == event.customerKey)
                #expect(EventCodec.encode(decoded) == bytes)
                if case .notification(let n) = decoded.body {
                    #expect(n.transaction?.raw == nil && n.renewalInfo?.raw == nil && n.appTransaction?.raw == nil)
                }
            }
        }
    }

    @Test func everyEnumerationCaseRoundTrips() throws {
        let subtypes: [NotificationSubtype?] = [nil, .unknown("NEW_SUBTYPE")] + NotificationSubtype.known
        let types = NotificationType.known + [.unknown("NEW_TYPE"), .unknown("REFUND")]
        let productTypes: [ProductType] = [.autoRenewable, .nonConsumable, .consumable, .nonRenewing, .unknown("Bundle")]
        let revocationTypes: [RevocationType?] = [nil, .refundFull, .refundProrated, .familyRevoke, .unknown("X")]
        let ownerships: [OwnershipType?] = [nil, .purchased, .familyShared, .unknown("OTHER")]
        var seq: Int64 = 1
        for (index, type) in types.enumerated() {
            let subtype = subtypes[index % subtypes.count]
            let facts = TransactionFacts(
                transactionId: "t\(index)", originalTransactionId: index % 2 == 0 ? "t\(index)" : "o\(index)",
                appTransactionId: index % 3 == 0 ? nil : "app", productId: "p", subscriptionGroupIdentifier: "g",
                type: productTypes[index % productTypes.count], purchaseDate: Int64.min, expiresDate: Int64.max,
                quantity: index % 4 == 0 ? 1 : -7, signedDate: 0, revocationDate: -1,
                revocationType: revocationTypes[index % revocationTypes.count], revocationPercentage: 100_000,
                isUpgraded: index % 2 == 1, ownership: ownerships[index % ownerships.count], appAccountToken: "tok é 🎉")
            let renewal = RenewalFacts(
                originalTransactionId: "o", appTransactionId: nil, productId: index % 2 == 0 ? "p" : nil,
                autoRenewProductId: index % 3 == 0 ? "p" : "q", autoRenewStatus: [nil, true, false][index % 3],
                isInBillingRetryPeriod: index % 2 == 0, gracePeriodExpiresDate: Int64.max, expirationIntent: 5,
                signedDate: Int64.min, appAccountToken: "")
            let event = Event(
                seq: seq,
                body: .notification(
                    NotificationFacts(
                        notificationUUID: "", type: type, subtype: subtype, signedDate: Int64.max, appTransactionId: "a",
                        transaction: Signed(facts, ref: RawRef(eventSeq: seq, slot: .nestedTransaction)),
                        renewalInfo: Signed(renewal, ref: RawRef(eventSeq: seq, slot: .nestedRenewalInfo)),
                        appTransaction: Signed(
                            AppTransactionFacts(appTransactionId: "a", originalPurchaseDate: 5, signedDate: 6),
                            ref: RawRef(eventSeq: seq, slot: .nestedAppTransaction)))))
            let decoded = try EventCodec.decode(EventCodec.encode(event), seq: seq)
            #expect(decoded == event)
            guard case .notification(let n) = decoded.body else { Issue.record("not a notification"); continue }
            #expect(n.type == type && n.subtype == subtype)
            #expect(n.transaction?.facts == facts)
            #expect(n.renewalInfo?.facts == renewal)

            var state = CustomerState(key: "k\(index)")
            state.transactions[facts.transactionId] = Signed(facts, ref: RawRef(eventSeq: Int64.min, slot: .own))
            state.renewalInfos["o"] = [Signed(renewal, ref: RawRef(eventSeq: Int64.max, slot: .nestedRenewalInfo))]
            state.lastNotification = NotificationSummaryFacts(notificationUUID: "u", type: type, subtype: subtype, signedDate: -5)
            state.accountToken = AccountTokenClaim(token: "tok", signedDate: 9, ref: RawRef(eventSeq: 3, slot: .nestedTransaction))
            let decodedState = try StateCodec.decode(StateCodec.encode(state))
            #expect(decodedState == state)
            #expect(Self.refs(decodedState) == Self.refs(state))
            seq += 1
        }
        for kind in [
            EventBody.renewalInfo(Signed(RenewalFacts(originalTransactionId: "o", signedDate: 1), ref: RawRef(eventSeq: 9, slot: .own))),
            .appTransaction(Signed(AppTransactionFacts(appTransactionId: "a", signedDate: 1), ref: RawRef(eventSeq: 9, slot: .own))),
        ] {
            let event = Event(seq: 9, body: kind)
            let decoded = try EventCodec.decode(EventCodec.encode(event), seq: 9)
            #expect(decoded == event && decoded.refs == event.refs)
        }
    }

    /// Replay applies stored facts without building the ``Event``
    /// (`CustomerState.apply(facts:seq:rules:interner:)`): it must do exactly what
    /// decoding and applying does, in any order with duplicates, including the
    /// ties that need raw JWS (which neither has once stored) and damaged bytes,
    /// and leave the state untouched when it throws.
    @Test func applyingStoredFactsEqualsDecodingThenApplying() throws {
        var ties = 0
        var damaged = 0
        for seed in 1...40 as ClosedRange<UInt64> {
            var rng = SplitMix64(seed: seed &* 7)
            let events = rng.shuffledWithDuplicates(RandomHistory.events(seed: seed))
            var byEvent: [CustomerKey: CustomerState] = [:]
            var byFacts: [CustomerKey: CustomerState] = [:]
            var interner = StringInterner(capacity: 64)
            for event in events {
                guard let key = event.customerKey else { continue }
                var bytes = EventCodec.encode(event)
                if rng.chance(0.05) {
                    // A damaged copy: both paths refuse it alike and change nothing.
                    bytes[rng.index(bytes.count)] ^= UInt8(1 + rng.index(255))
                }
                let before = byFacts[key, default: CustomerState(key: key)]
                var expected = byEvent[key, default: CustomerState(key: key)]
                var expectedFailure: StoredFactsFailure? = nil
                do {
                    let decoded = try EventCodec.decode(bytes, seq: event.seq)
                    do { try expected.apply(decoded, rules: testRules) } catch { expectedFailure = .missingRawJWS(error) }
                } catch {
                    expectedFailure = .undecodable(error)
                }
                var actual = before
                var actualFailure: StoredFactsFailure? = nil
                bytes.withUnsafeBytes { raw in
                    do throws(StoredFactsFailure) {
                        try actual.apply(facts: raw, seq: event.seq, rules: testRules, interner: &interner)
                    } catch {
                        actualFailure = error
                    }
                }
                #expect(actualFailure == expectedFailure)
                switch actualFailure {
                case .missingRawJWS?: ties += 1
                case .undecodable?: damaged += 1
                case nil: break
                }
                if actualFailure != nil {
                    #expect(StateCodec.encode(actual) == StateCodec.encode(before))
                    continue
                }
                #expect(actual == expected)
                #expect(Self.refs(actual) == Self.refs(expected))
                #expect(StateCodec.encode(actual) == StateCodec.encode(expected))
                byEvent[key] = expected
                byFacts[key] = actual
            }
        }
        #expect(ties > 0)
        #expect(damaged > 0)
    }

    /// A replay applies each customer's stored facts as rows of one buffer
    /// (`CustomerState.apply(facts:rows:rules:interner:)`), making only the latest
    /// notification's UUID into a `String`: the state equals applying each row on its
    /// own, in any order with duplicates; a row that cannot be applied is named, and
    /// the state is then that of the rows before it.
    @Test func applyingRowsOfOneBufferEqualsApplyingEachRow() throws {
        var failures = 0
        var notifications = 0
        for seed in 1...40 as ClosedRange<UInt64> {
            var rng = SplitMix64(seed: seed &* 11)
            var byCustomer: [CustomerKey: (bytes: [UInt8], rows: [StoredFactsRow])] = [:]
            for event in rng.shuffledWithDuplicates(RandomHistory.events(seed: seed)) {
                guard let key = event.customerKey else { continue }
                var facts = EventCodec.encode(event)
                if rng.chance(0.02) { facts[rng.index(facts.count)] ^= UInt8(1 + rng.index(255)) }
                var customer = byCustomer[key, default: ([], [])]
                customer.rows.append(StoredFactsRow(seq: event.seq, start: customer.bytes.count, count: facts.count))
                customer.bytes += facts
                byCustomer[key] = customer
            }
            for (key, customer) in byCustomer.sorted(by: { $0.key < $1.key }) {
                var expected = CustomerState(key: key)
                var expectedFailure: StoredFactsRowFailure? = nil
                var interner = StringInterner(capacity: 64)
                customer.bytes.withUnsafeBytes { all in
                    for (index, row) in customer.rows.enumerated() {
                        do throws(StoredFactsFailure) {
                            try expected.apply(
                                facts: UnsafeRawBufferPointer(rebasing: all[row.start..<(row.start + row.count)]), seq: row.seq,
                                rules: testRules, interner: &interner)
                        } catch {
                            expectedFailure = StoredFactsRowFailure(index: index, failure: error)
                            return
                        }
                    }
                }
                var actual = CustomerState(key: key)
                var actualFailure: StoredFactsRowFailure? = nil
                customer.bytes.withUnsafeBytes { all in
                    do throws(StoredFactsRowFailure) {
                        try actual.apply(facts: all, rows: customer.rows, rules: testRules, interner: &interner)
                    } catch {
                        actualFailure = error
                    }
                }
                #expect(actualFailure == expectedFailure)
                if actualFailure != nil { failures += 1 }
                if actual.lastNotification != nil { notifications += 1 }
                #expect(actual == expected)
                #expect(actual.lastNotification == expected.lastNotification)
                #expect(Self.refs(actual) == Self.refs(expected))
                #expect(StateCodec.encode(actual) == StateCodec.encode(expected))
            }
        }
        #expect(failures > 0)
        #expect(notifications > 0)
    }

    @Test func truncatedInputThrows() throws {
        for state in try Self.randomStates(seeds: 1...4) {
            let sample = StateCodec.encode(state)
            for length in 0..<sample.count {
                // Without its last byte, the event needs: what a build that did not keep them stored,
                // read as unknown (the derivations then read the events).
                if length == sample.count - 1, state.eventNeeds != nil {
                    var unknown = state
                    unknown.eventNeeds = nil
                    #expect(try StateCodec.decode(sample[..<length]) == unknown)
                    continue
                }
                #expect(throws: CodecError.self) { try StateCodec.decode(sample[..<length]) }
            }
        }
        for event in RandomHistory.events(seed: 5) {
            let bytes = EventCodec.encode(event)
            for length in 0..<bytes.count {
                #expect(throws: CodecError.self) { try EventCodec.decode(bytes[..<length], seq: 1) }
            }
        }
    }

    static func evaluateForMoment(_ bytes: [UInt8]) throws -> CustomerView {
        try bytes.withUnsafeBytes { buffer throws(CodecError) in try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: Time.day(30)) }
    }

    /// What decoding garbage came to: every input is either decoded or refused with a
    /// ``CodecError`` (typed throws: nothing else can come out), and nothing traps.
    struct GarbageOutcomes {
        var inputs = 0
        var decoded = 0
        var refused = 0

        /// Decodes `bytes` as a state, an event, and for evaluation at a moment; what
        /// decodes must encode to bytes that decode to the same value.
        mutating func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
            inputs += 1
            // Typed throws: a decoder can only refuse with a CodecError (here: nil).
            let state: CustomerState?
            do throws(CodecError) { state = try StateCodec.decode(bytes) } catch { state = nil }
            if let state {
                decoded += 1
                let again = try? StateCodec.decode(StateCodec.encode(state))
                #expect(again == state, "a decoded state does not survive its own encoding", sourceLocation: sourceLocation)
            } else {
                refused += 1
            }
            let view: CustomerView?
            do { view = try CodecTests.evaluateForMoment(bytes) } catch {
                #expect(error is CodecError, "evaluation refused with \(error)", sourceLocation: sourceLocation)
                view = nil
            }
            if view != nil { decoded += 1 } else { refused += 1 }
            let event: Event?
            do throws(CodecError) { event = try EventCodec.decode(bytes, seq: 1) } catch { event = nil }
            if let event {
                decoded += 1
                let again = try? EventCodec.decode(EventCodec.encode(event), seq: 1)
                #expect(again == event, "a decoded event does not survive its own encoding", sourceLocation: sourceLocation)
            } else {
                refused += 1
            }
        }
    }

    @Test func garbageNeverTraps() throws {
        var rng = SplitMix64(seed: 2026)
        // Random bytes, half of them behind a valid version byte (and event kind) to get past the first check.
        var random = GarbageOutcomes()
        for round in 0..<20_000 {
            var bytes = (0..<rng.index(120)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if round % 2 == 0 { bytes.insert(contentsOf: [round % 4 == 0 ? 1 : 2, UInt8(round % 8)], at: 0) }
            random.check(bytes)
        }
        // Every input came out one way or the other (three decoders each), and garbage is refused.
        #expect(random.inputs == 20_000)
        #expect(random.decoded + random.refused == 3 * random.inputs)
        #expect(random.refused > 0)
        // Valid encodings with one byte changed.
        var damaged = GarbageOutcomes()
        let states = try Self.randomStates(seeds: 6...8)
        let events = RandomHistory.events(seed: 9)
        let samples = states.map(StateCodec.encode) + events.map(EventCodec.encode)
        for sample in samples {
            for index in sample.indices {
                var bytes = sample
                bytes[index] ^= UInt8.random(in: 1...255, using: &rng)
                damaged.check(bytes)
            }
        }
        #expect(damaged.inputs == samples.reduce(0) { $0 + $1.count })
        #expect(damaged.decoded + damaged.refused == 3 * damaged.inputs)
        #expect(damaged.refused > 0)
    }

    /// Stored states with one byte changed: whenever the whole decode accepts the bytes,
    /// evaluating them in place (strings made only when read, periods read as heads)
    /// answers as the decoded state does; whenever it refuses them for what evaluation
    /// reads too (the string table, a transaction), evaluation refuses them alike.
    @Test func damagedStatesEvaluateAsTheyDecode() throws {
        var rng = SplitMix64(seed: 31)
        var accepted = 0
        var refusedAlike = 0
        for state in try Self.randomStates(seeds: 10...14) {
            let sample = StateCodec.encode(state)
            for index in sample.indices {
                var bytes = sample
                bytes[index] ^= UInt8.random(in: 1...255, using: &rng)
                let at = Time.day(rng.int(-5...200))
                let inPlace: Result<CustomerView, CodecError> = bytes.withUnsafeBytes { buffer in
                    Result { () throws(CodecError) in try Evaluation.evaluate(stateBytes: buffer, rules: testRules, at: at) }
                }
                do throws(CodecError) {
                    let decoded = try StateCodec.decode(bytes)
                    accepted += 1
                    #expect(try inPlace.get() == Evaluation.evaluate(decoded, rules: testRules, at: at), "byte \(index)")
                } catch {
                    guard error.code == .invalidUTF8 || error.code == .truncated else { continue }
                    refusedAlike += 1
                    if case .failure(let inPlaceError) = inPlace {
                        #expect(inPlaceError.code == error.code, "byte \(index)")
                    } else {
                        Issue.record("byte \(index): evaluation accepted what the whole decode refuses as \(error.code)")
                    }
                }
            }
        }
        #expect(accepted > 100)
        #expect(refusedAlike > 10)
    }

    @Test func damageIsNamed() throws {
        func eventError(_ bytes: [UInt8]) -> CodecError.Code? {
            do throws(CodecError) {
                _ = try EventCodec.decode(bytes, seq: 1)
                return nil
            } catch {
                return error.code
            }
        }
        func stateError(_ bytes: [UInt8]) -> CodecError.Code? {
            do throws(CodecError) {
                _ = try StateCodec.decode(bytes)
                return nil
            } catch {
                return error.code
            }
        }
        let event = Event(seq: 1, body: .renewalInfo(Signed(RenewalFacts(originalTransactionId: "o", signedDate: 1), ref: RawRef(eventSeq: 1, slot: .own))))
        let bytes = EventCodec.encode(event)
        #expect(eventError([UInt8]()) == .truncated)
        #expect(eventError([5] + Array(bytes.dropFirst())) == .unsupportedVersion)
        #expect(eventError(bytes + [0]) == .trailingBytes)
        #expect(eventError([1, 9]) == .invalidTag)
        // Flags 0x80 0x00: a varint that is not minimal.
        #expect(eventError([1, 1, 0x80, 0x00]) == .malformedInteger)
        // Eleven bytes of varint.
        #expect(eventError([1, 1] + [UInt8](repeating: 0xFF, count: 10) + [1]) == .malformedInteger)
        // A transaction id that is not UTF-8.
        #expect(eventError([1, 1, 0, 2, 0xC3, 0x28]) == .invalidUTF8)
        // Unknown flag bits.
        #expect(eventError([1, 1, 0x80, 0x40]) == .invalidTag)
        // A count larger than the bytes left.
        #expect(stateError([1, 1, 0x6B, 0xFF, 0xFF, 0x03]) == .truncated)
        #expect(stateError([2, 0xFF, 0xFF, 0x03]) == .truncated)
        #expect(stateError([6, 0]) == .unsupportedVersion)
        // The same transaction twice.
        var state = CustomerState(key: "k")
        state.transactions["t"] = Signed(
            TransactionFacts(transactionId: "t", originalTransactionId: "t", productId: "p", type: .consumable, purchaseDate: 1, signedDate: 1),
            ref: RawRef(eventSeq: 1, slot: .own))
        let one = StateCodec.encode(state)
        // Version 2, a table of three strings ("k", "t", "p": 7 bytes), the key's number,
        // count 1, then the transaction record, then the group count and the flags.
        #expect(Array(one[0..<10]) == [2, 3, 1, UInt8(ascii: "k"), 1, UInt8(ascii: "t"), 1, UInt8(ascii: "p"), 0, 1])
        let record = Array(one[10..<(one.count - 2)])
        let twice = Array(one[0..<9]) + [2] + record + record + [0, 0]
        #expect(stateError(twice) == .inconsistent)
        // A string number outside the table.
        var outside = one
        outside[8] = 3
        #expect(stateError(outside) == .inconsistent)

        // Format 1 (strings in full where they occur, no table) is still read. The
        // record: ref (seq 1, slot own), flags (original is self: 0x80 0x04), then
        // the transaction id and product, here numbers 1 and 2, in full there.
        #expect(Array(record[0..<6]) == [2, 0, 0x80, 0x04, 1, 2])
        let firstFormat: [UInt8] =
            [1, 1, UInt8(ascii: "k"), 1] + Array(record[0..<4]) + [1, UInt8(ascii: "t"), 1, UInt8(ascii: "p")]
            + Array(record[6...]) + [0, 0]
        #expect(try StateCodec.decode(firstFormat) == state)
    }

    @Test func eventDecodingIsFast() throws {
        let events = (1...8 as ClosedRange<UInt64>).flatMap { RandomHistory.events(seed: $0) }
        let blobs = events.map(EventCodec.encode)
        let clock = ContinuousClock()
        var decoded = 0
        let rounds = 20
        let elapsed = try clock.measure {
            for _ in 0..<rounds {
                for (index, blob) in blobs.enumerated() {
                    let event = try blob.withUnsafeBytes { buffer throws(CodecError) in try EventCodec.decode(buffer, seq: Int64(index)) }
                    decoded &+= Int(event.seq)
                }
            }
        }
        let perEvent = elapsed / (rounds * blobs.count)
        print("EventCodec.decode: \(perEvent) per event over \(rounds * blobs.count) events (\(blobs.map(\.count).reduce(0, +) / blobs.count) bytes on average)")
        // A guard against pathological slowness only (it takes a few microseconds): generous
        // for a debug build under parallel tests on a loaded 2-core machine.
        #expect(perEvent < .milliseconds(2))
        #expect(decoded != 0)
    }
}
