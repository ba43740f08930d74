import EntitlementCore
import Testing
import TestSupport

/// Usage records, FIFO attribution and consumption shares (specification sections 5 and 11),
/// on cases worked by hand.
@Suite("Usage and consumption")
struct UsageTests {
    static func spend(_ id: String, _ units: Int64, at: Int64, currency: String = "coins") -> UsageFacts {
        UsageFacts(usageId: id, appTransactionId: Customer.app, at: at, amount: .spend(currency: currency, units: units))
    }

    static func consumed(_ id: String, _ transactionId: String, _ share: Int64, at: Int64) -> UsageFacts {
        UsageFacts(usageId: id, appTransactionId: Customer.app, at: at, amount: .consumed(transactionId: transactionId, share: share))
    }

    static func share(_ transactionId: String, _ history: History, now: Int64 = Time.day(100), requestedAt: Int64? = nil) -> ConsumptionShare? {
        Consumption.share(
            of: transactionId, in: history.state(), rules: testRules, now: now, requestedAt: requestedAt ?? now)
    }

    /// Two packs of 100 coins (days 1 and 2); 30 spent on day 3 and 120 on day 4
    /// (A gives 70 more, B 50); B refunded 25 % prorated on day 5 (25 coins back to
    /// Apple); 25 spent on day 6 (from what B still credits: 75 - 50).
    @Test func coinsBoughtInTwoPacksSpentAcrossThemOneRefundedProrated() {
        let history = History()
        let packA = transaction("3000000000000001", product: Product.coins, purchase: Time.day(1))
        let packB = transaction("3000000000000002", product: Product.coins, purchase: Time.day(2))
        history.add(packA)
        history.add(packB)
        history.use(Self.spend("u1", 30, at: Time.day(3)))
        history.use(Self.spend("u2", 120, at: Time.day(4)))
        history.add(
            transaction(
                "3000000000000002", product: Product.coins, purchase: Time.day(2), signed: Time.day(5), revoked: Time.day(5),
                revocationType: "REFUND_PRORATED", revocationPercentage: 25_000))
        history.use(Self.spend("u3", 25, at: Time.day(6)))

        #expect(history.view(at: Time.day(2)).balance("coins") == 200)
        #expect(history.view(at: Time.day(3)).balance("coins") == 170)
        #expect(history.view(at: Time.day(4)).balance("coins") == 50)
        #expect(history.view(at: Time.day(5)).balance("coins") == 25)  // 200 - 25 refunded - 150 spent
        #expect(history.view(at: Time.day(6)).balance("coins") == 0)

        let atDay4 = UsageAttribution.fifo(
            transactions: history.state().transactions.values.map(\.facts), usages: history.state().usages.values,
            rules: testRules, at: Time.day(4))
        #expect(atDay4.attributed == ["3000000000000001": 100, "3000000000000002": 50])
        #expect(Self.share("3000000000000001", history, now: Time.day(4))?.percentage == 100_000)
        #expect(Self.share("3000000000000002", history, now: Time.day(4))?.percentage == 50_000)

        // u3 comes from no purchase: B is revoked by day 6, so it is skipped.
        let now = Self.share("3000000000000002", history)
        #expect(now == ConsumptionShare(percentage: 50_000, basis: .units, unitsSpent: 50, units: 100))
        #expect(Self.share("3000000000000001", history)?.percentage == 100_000)
    }

    /// A pack refunded prorated before a spend is skipped by it, as a revoked purchase
    /// (specification section 11): the 60 coins it leaves stay in the balance, and the
    /// spend comes from B.
    @Test func aPackRefundedProratedBeforeSpendingIsSkipped() {
        let history = History()
        history.add(
            transaction(
                "3000000000000001", product: Product.coins, purchase: Time.day(1), signed: Time.day(2), revoked: Time.day(2),
                revocationType: "REFUND_PRORATED", revocationPercentage: 40_000))
        history.add(transaction("3000000000000002", product: Product.coins, purchase: Time.day(2)))
        history.use(Self.spend("u1", 100, at: Time.day(3)))
        #expect(history.view(at: Time.day(3)).balance("coins") == 60)
        #expect(Self.share("3000000000000001", history)?.percentage == 0)
        #expect(Self.share("3000000000000002", history)?.percentage == 100_000)
    }

    /// A fully refunded pack is skipped; spending dated before a purchase cannot come from it.
    @Test func fullyRefundedPacksAreSkippedAndLaterPacksGiveNothingToEarlierSpends() {
        let history = History()
        history.add(
            transaction(
                "3000000000000001", product: Product.coins, purchase: Time.day(1), signed: Time.day(2), revoked: Time.day(2),
                revocationType: "REFUND_FULL"))
        history.add(transaction("3000000000000002", product: Product.coins, purchase: Time.day(3), quantity: 2))
        history.use(Self.spend("u1", 50, at: Time.day(4)))
        let attribution = UsageAttribution.fifo(
            transactions: history.state().transactions.values.map(\.facts), usages: history.state().usages.values,
            rules: testRules, at: Time.day(10))
        #expect(attribution.attributed == ["3000000000000002": 50])
        #expect(Self.share("3000000000000002", history)?.percentage == 25_000)  // 50 of 2 x 100
        #expect(Self.share("3000000000000001", history)?.percentage == 0)
        #expect(history.view(at: Time.day(4)).balance("coins") == 150)
        #expect(history.view(at: Time.day(3)).balance("coins") == 200)  // the spend is dated later
    }

    /// The balance at a spend's own moment decides (specification section 11): with
    /// 100 coins bought on day 0 and 100 on day 1, the second refunded in full on day 5
    /// and 50 spent on day 10, 120 on day 3 fits (200 then), though day 10 ends at -70.
    @Test func aSpendIsCheckedAgainstTheBalanceAtItsOwnMomentOnly() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(0)))
        history.add(
            transaction(
                "3000000000000002", product: Product.coins, purchase: Time.day(1), signed: Time.day(5), revoked: Time.day(5),
                revocationType: "REFUND_FULL"))
        history.use(Self.spend("u-day-10", 50, at: Time.day(10)))
        func refusal(_ units: Int64, at: Int64) -> String? {
            UsageCheck.refusal(for: Self.spend("new", units, at: at), state: history.state(), rules: testRules)?.code
        }
        #expect(refusal(120, at: Time.day(3)) == nil)
        #expect(refusal(200, at: Time.day(3)) == nil)
        #expect(refusal(201, at: Time.day(3)) == "INSUFFICIENT_BALANCE")
        #expect(refusal(50, at: Time.day(10)) == nil)  // 200 - 100 refunded - 50 spent
        #expect(refusal(51, at: Time.day(10)) == "INSUFFICIENT_BALANCE")
        #expect(refusal(1, at: Time.day(0) - 1) == "INSUFFICIENT_BALANCE")

        history.use(Self.spend("u-day-3", 120, at: Time.day(3)))
        #expect(history.view(at: Time.day(3)).balance("coins") == 80)
        #expect(history.view(at: Time.day(10)).balance("coins") == -70)
        // The spend recorded on day 3 counts from then on; nothing dated later is looked at.
        #expect(refusal(80, at: Time.day(4)) == nil)
        #expect(refusal(81, at: Time.day(4)) == "INSUFFICIENT_BALANCE")
        #expect(refusal(1, at: Time.day(10)) == "INSUFFICIENT_BALANCE")
        // What no purchase could give stays unattributed: the refunded pack gives nothing on day 10.
        let attribution = UsageAttribution.fifo(
            transactions: history.state().transactions.values.map(\.facts), usages: history.state().usages.values,
            rules: testRules, at: Time.day(10))
        #expect(attribution.attributed == ["3000000000000001": 100, "3000000000000002": 20])
        #expect(attribution.unattributed == ["coins": 50])
    }

    /// A week's pass bought on day 0, the request signed three and a half days in: half used.
    @Test func aPassHalfUsed() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.pass, purchase: Time.day(0)))
        let requested = Time.day(3) + 12 * Time.hour
        #expect(Self.share("3000000000000001", history, requestedAt: requested) == ConsumptionShare(percentage: 50_000, basis: .window))
        // Floor: one millisecond short of half.
        #expect(Self.share("3000000000000001", history, requestedAt: requested - 1)?.percentage == 49_999)
        #expect(Self.share("3000000000000001", history, requestedAt: Time.day(8))?.percentage == 100_000)
        // A second pass stacks after the first: not started at the request.
        history.add(transaction("3000000000000002", product: Product.pass, purchase: Time.day(1)))
        #expect(Self.share("3000000000000002", history, requestedAt: requested)?.percentage == 0)
        #expect(Self.share("3000000000000002", history, requestedAt: Time.day(7) + 7 * Time.day / 4)?.percentage == 25_000)
    }

    /// A legacy receipt's one-time entries take the type their rules imply (receipts do
    /// not say it): a coin pack answers its spent share and a pass its elapsed share, as
    /// signed purchases do.
    @Test func receiptEntriesShareAsTheirRulesTypeThem() {
        let history = History()
        let otid = ReceiptHistoryTests.otid
        let key = "otid:" + otid
        let pack = ReceiptInAppEntry(productId: Product.coins, transactionId: "1000000000000021", originalTransactionId: otid, purchaseDate: Time.day(1))
        let pass = ReceiptInAppEntry(productId: Product.pass, transactionId: "1000000000000022", originalTransactionId: otid, purchaseDate: Time.day(0))
        history.add(ReceiptHistoryTests.receipt([pack, pass], created: Time.day(2)))
        history.use(UsageFacts(usageId: "u1", appTransactionId: key, at: Time.day(3), amount: .spend(currency: "coins", units: 40)))
        let state = history.state(key)
        #expect(Evaluation.evaluate(state, rules: testRules, at: Time.day(4)).balance("coins") == 60)
        #expect(
            Consumption.share(of: "1000000000000021", in: state, rules: testRules, now: Time.day(4), requestedAt: Time.day(4))
                == ConsumptionShare(percentage: 40_000, basis: .units, unitsSpent: 40, units: 100))
        #expect(
            Consumption.share(of: "1000000000000022", in: state, rules: testRules, now: Time.day(4), requestedAt: Time.day(3) + 12 * Time.hour)
                == ConsumptionShare(percentage: 50_000, basis: .window))
    }

    /// A non-consumable answers the latest share recorded for it, else 0.
    @Test func aNonConsumableWithARecordedShare() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.day(0)))
        #expect(Self.share("3000000000000001", history) == ConsumptionShare(percentage: 0, basis: .none))
        history.use(Self.consumed("c2", "3000000000000001", 45_000, at: Time.day(5)))
        history.use(Self.consumed("c1", "3000000000000001", 30_000, at: Time.day(2)))
        #expect(Self.share("3000000000000001", history) == ConsumptionShare(percentage: 45_000, basis: .recorded))
        // A consumed record does not touch balances.
        #expect(history.view(at: Time.day(9)).balances.isEmpty)
    }

    /// A share recorded with a date after the moment asked about has not happened yet,
    /// as a spend dated later does not count either.
    @Test func aRecordedShareDatedLaterDoesNotCountYet() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.lifetime, purchase: Time.day(0)))
        history.use(Self.consumed("c1", "3000000000000001", 30_000, at: Time.day(2)))
        history.use(Self.consumed("c2", "3000000000000001", 90_000, at: Time.day(20)))
        #expect(Self.share("3000000000000001", history, now: Time.day(10)) == ConsumptionShare(percentage: 30_000, basis: .recorded))
        #expect(Self.share("3000000000000001", history, now: Time.day(1)) == ConsumptionShare(percentage: 0, basis: .none))
        #expect(Self.share("3000000000000001", history, now: Time.day(20)) == ConsumptionShare(percentage: 90_000, basis: .recorded))
    }

    @Test func anAutoRenewableLeavesThePercentageToApple() {
        let history = History()
        history.add(transaction(Customer.otid, purchase: Time.day(0), expires: Time.day(30)))
        #expect(Self.share(Customer.otid, history) == ConsumptionShare(percentage: nil, basis: .subscription))
        #expect(Self.share("999", history) == nil)
    }

    @Test func usageRecordsRoundTripThroughTheirJSONAndTheCodecs() throws {
        let records = [
            Self.spend("u1", 30, at: Time.day(3)),
            UsageFacts(usageId: "u2", customer: "otid:2000", at: Time.day(4), amount: .consumed(transactionId: "2000", share: 100_000)),
        ]
        for record in records {
            #expect(UsageFacts(json: record.canonicalJSON) == record)
            let event = Event(seq: 9, body: .usage(record))
            #expect(try EventCodec.decode(EventCodec.encode(event), seq: 9) == event)
            #expect(event.customerKey == record.customerKey)
        }
        #expect(records[1].customerKey == "otid:2000")
        #expect(UsageFacts(json: ["source": "apple", "usageId": "x", "at": 1, "appTransactionId": "a", "currency": "c", "units": 1]) == nil)
        var state = CustomerState(key: Customer.app)
        for record in records { try state.apply(Event(seq: 1, body: .usage(record)), rules: testRules) }
        #expect(try StateCodec.decode(StateCodec.encode(state)) == state)
    }
}

/// FIFO attribution and balances on random histories with usage.
@Suite("Usage properties")
struct UsagePropertyTests {
    @Test(arguments: PropertySeeds.seeds(1...40))
    func fifoNeverAttributesMoreThanAPurchaseHoldsAndBalancesArePurchasesMinusRefundsMinusSpending(seed: UInt64) throws {
        let events = RandomHistory.events(seed: seed)
        let states = try reduceAll(events)
        var spendsSeen = 0
        for (_, state) in states {
            for at in PropertyTests.moments + [Time.day(20), Time.day(47)] {
                let transactions = state.transactions.values.map(\.facts)
                let attribution = UsageAttribution.fifo(transactions: transactions, usages: state.usages.values, rules: testRules, at: at)
                var expected: [String: Int64] = [:]
                var spentByCurrency: [String: Int64] = [:]
                for transaction in transactions where transaction.type == .consumable && transaction.purchaseDate <= at {
                    let rule = testRules.products[transaction.productId]
                    let currency = rule?.currency ?? transaction.productId
                    let granted = transaction.quantity * (rule?.units ?? 1)
                    #expect((attribution.attributed[transaction.transactionId] ?? 0) <= granted)
                    var refunded: Int64 = 0
                    if let revoked = transaction.revocationDate, revoked <= at {
                        if transaction.revocationType == .refundProrated, let percentage = transaction.revocationPercentage {
                            refunded = (2 * granted * percentage + 100_000) / 200_000
                        } else {
                            refunded = granted
                        }
                    }
                    expected[currency, default: 0] += granted - refunded
                }
                for usage in state.usages.values where usage.at <= at {
                    if case .spend(let currency, let units) = usage.amount {
                        expected[currency, default: 0] -= units
                        spentByCurrency[currency, default: 0] += units
                        spendsSeen += 1
                    }
                }
                // An operator's credits add (or take) from when they were recorded.
                for record in state.operatorRecords.values where record.recordedAt <= at {
                    if case .credit(let currency, let units) = record.action { expected[currency, default: 0] += units }
                }
                let view = Evaluation.evaluate(state, rules: testRules, at: at)
                #expect(Dictionary(uniqueKeysWithValues: view.balances.map { ($0.currency, $0.amount) }) == expected)
                // Every unit spent is attributed to a purchase or counted as unattributed.
                var accounted: [String: Int64] = attribution.unattributed
                for (id, units) in attribution.attributed {
                    let facts = state.transactions[id]!.facts
                    accounted[testRules.products[facts.productId]?.currency ?? facts.productId, default: 0] += units
                }
                #expect(accounted.filter { $0.value != 0 } == spentByCurrency.filter { $0.value != 0 })
            }
        }
        // This seed's history spent something: true of the suite's seeds, not of every soak seed.
        if PropertySeeds.isTheSuites(seed) { #expect(spendsSeen > 0) }
    }
}

/// History (specification section 7) shows what a spend did to a balance, caused by the usage record.
@Suite("Usage in history")
struct UsageHistoryTests {
    @Test func aSpendIsABalanceLineCausedByItsUsageRecord() {
        let history = History()
        history.add(transaction("3000000000000001", product: Product.coins, purchase: Time.day(1)))
        history.use(UsageTests.spend("order-9", 30, at: Time.day(3)))
        history.use(UsageTests.consumed("read-1", "3000000000000001", 10_000, at: Time.day(4)))
        let lines = CustomerHistory.timeline(state: history.state(), events: history.events, rules: testRules, until: Time.day(10))
        let balances = lines.compactMap { line -> (Int64, Int64, Int64?, HistoryCause?)? in
            guard case .balance(let currency, let value, let previous) = line.change, currency == "coins" else { return nil }
            return (line.at, value, previous, line.cause)
        }
        #expect(balances.count == 2)
        #expect(balances.first?.0 == Time.day(1) && balances.first?.1 == 100)
        #expect(balances.last?.0 == Time.day(3) && balances.last?.1 == 70 && balances.last?.2 == 100)
        #expect(balances.last?.3 == HistoryCause(kind: .usage, id: "order-9"))
        #expect(lines.last?.json()["cause"] == ["kind": "usage", "id": "order-9"])
    }
}
