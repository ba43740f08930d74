import EntitlementCore
import Testing
import TestSupport

/// The revenue ledger and the metrics of specification section 14, worked by hand.
@Suite("Revenue and metrics")
struct RevenueTests {
    static let otid = Customer.otid

    static func facts(_ history: History, key: CustomerKey = Customer.app) -> RevenueFacts {
        let state = history.state(key)
        return RevenueFacts.derive(state: state, events: history.events)
    }

    static func ledger(_ history: History, settings: RevenueSettings = RevenueSettings()) -> [LedgerLine] {
        RevenueLedger.lines(of: [facts(history)], settings: settings).lines
    }

    static func metrics(
        _ history: History, from: Int64, to: Int64, interval: MetricsInterval, settings: RevenueSettings = RevenueSettings(),
        rules: Rules = testRules
    ) throws -> [MetricsLine] {
        var sums = MetricsAccumulator(
            intervals: try MetricsIntervals.make(from: from, to: to, interval: interval), settings: settings, rules: rules)
        sums.add(facts(history))
        return sums.result()
    }

    static func rates(_ csv: String, reporting: String = "USD", smallBusiness: Bool = false) throws -> RevenueSettings {
        RevenueSettings(reportingCurrency: reporting, exchangeRates: try ExchangeRates(csv: csv), smallBusinessProgram: smallBusiness)
    }

    @Test func roundingIsHalfAwayFromZero() {
        #expect(Rounding.halfAwayFromZero(5, dividedBy: 2) == 3)
        #expect(Rounding.halfAwayFromZero(-5, dividedBy: 2) == -3)
        #expect(Rounding.halfAwayFromZero(149, dividedBy: 100) == 1)
        #expect(Rounding.halfAwayFromZero(-149, dividedBy: 100) == -1)
        #expect(Rounding.halfAwayFromZero(150, dividedBy: 100) == 2)
        #expect(ExchangeRates.Rate(mantissa: 5, scale: 1).convert(-3) == -2)  // -1.5 -> -2
        #expect(ExchangeRates.Rate(mantissa: 5, scale: 1).convert(3) == 2)
    }

    @Test func ratesHoldFromTheirDayUntilTheNextLine() throws {
        let rates = try ExchangeRates(csv: "date,currency,rate\r\n2025-11-01,EUR,1.10\n\n2025-12-01,EUR,1.2\n2025-11-01,JPY,0.0067\n")
        #expect(rates.rate(of: "EUR", at: CivilTime.millis(year: 2025, month: 10, day: 31, hour: 23)) == nil)
        #expect(rates.rate(of: "EUR", at: CivilTime.millis(year: 2025, month: 11, day: 1))?.description == "1.1")
        #expect(rates.rate(of: "EUR", at: CivilTime.millis(year: 2025, month: 11, day: 30, hour: 23, minute: 59))?.description == "1.1")
        #expect(rates.rate(of: "EUR", at: CivilTime.millis(year: 2025, month: 12, day: 1))?.description == "1.2")
        #expect(rates.rate(of: "EUR", at: CivilTime.millis(year: 2030, month: 1, day: 1))?.description == "1.2")
        #expect(rates.rate(of: "JPY", at: CivilTime.millis(year: 2026, month: 1, day: 1))?.convert(1_200_000) == 8040)
        #expect(rates.rate(of: "GBP", at: CivilTime.millis(year: 2026, month: 1, day: 1)) == nil)
        // The reporting currency is 1 without a line.
        #expect(RevenueSettings(reportingCurrency: "USD", exchangeRates: rates).rate(of: "USD", at: 0) == .one)
    }

    @Test func aMalformedRatesLineNamesTheLineAndTheField() {
        func error(_ csv: String) -> ExchangeRatesError? {
            do {
                _ = try ExchangeRates(csv: csv)
                return nil
            } catch { return error }
        }
        #expect(error("date,currency,rate\n2025-11-01,EUR\n")?.line == 2)
        #expect(error("date,currency,rate\n2025-11-01,EUR\n")?.field == nil)
        #expect(error("2025-11-01,EUR,1.1\n2025-13-01,EUR,1.2\n") == ExchangeRatesError(line: 2, field: "date", reason: "\"2025-13-01\" is not a date YYYY-MM-DD"))
        #expect(error("2025-11-01,eur,1.1\n")?.field == "currency")
        #expect(error("2025-11-01,EUR,abc\n")?.field == "rate")
        #expect(error("2025-11-01,EUR,1.1.1\n")?.field == "rate")
        #expect(error("2025-11-01,EUR,0\n")?.reason.contains("zero") == true)
        #expect(error("2025-11-01,EUR,0.000\n")?.reason.contains("zero") == true)
        #expect(error("x\n2025-11-01,EUR,-1.5\n") != nil)
        #expect(error("2025-11-01,EUR,-1.5\n")?.reason.contains("negative") == true)
        #expect(error("2025-11-01,EUR,1\n2025-11-01,EUR,2\n")?.line == 2)
        #expect(error("2025-11-01,EUR,-1.5\n")?.description == "line 1, field rate: -1.5 is negative: a rate must be greater than 0")
    }

    @Test func intervalsAreCalendarAlignedAndCut() throws {
        // 2025-11-21 is a Friday.
        let from = CivilTime.millis(year: 2025, month: 11, day: 21, hour: 12)
        let to = CivilTime.millis(year: 2025, month: 12, day: 10)
        let weeks = try MetricsIntervals.make(from: from, to: to, interval: .week)
        #expect(weeks.map(\.from) == [from, CivilTime.millis(year: 2025, month: 11, day: 24), CivilTime.millis(year: 2025, month: 12, day: 1), CivilTime.millis(year: 2025, month: 12, day: 8)])
        #expect(weeks.last?.to == to)
        let months = try MetricsIntervals.make(from: from, to: to, interval: .month)
        #expect(months.count == 2)
        #expect(months[0].to == CivilTime.millis(year: 2025, month: 12, day: 1))
        let days = try MetricsIntervals.make(from: from, to: to, interval: .day)
        #expect(days.count == 19)
        #expect(try MetricsIntervals.make(from: from, to: from, interval: .day).isEmpty)
        #expect(throws: MetricsRangeError.self) { try MetricsIntervals.make(from: to, to: from, interval: .day) }
        do {
            _ = try MetricsIntervals.make(from: 0, to: 10_001 * Time.day, interval: .day)
            Issue.record("10,001 days were accepted")
        } catch {
            #expect(error.code == .tooManyIntervals)
        }
        #expect(try MetricsIntervals.make(from: 0, to: 10_000 * Time.day, interval: .day).count == 10_000)
    }

    @Test func aProratedRefundInAnotherMonthThanTheSale() throws {
        let history = History()
        let sold = CivilTime.millis(year: 2026, month: 1, day: 20)
        let refunded = CivilTime.millis(year: 2026, month: 2, day: 3, hour: 9)
        history.add(transaction("2000000000000101", original: Self.otid, purchase: sold, expires: sold + 30 * Time.day, price: 9990))
        history.add(
            transaction(
                "2000000000000101", original: Self.otid, purchase: sold, expires: sold + 30 * Time.day, signed: refunded,
                revoked: refunded, revocationType: "REFUND_PRORATED", revocationPercentage: 33_333, price: 9990))
        let lines = Self.ledger(history)
        #expect(lines.map(\.entry.type) == [.sale, .refund])
        #expect(lines[0].entry.amount == 9990)
        #expect(lines[0].reportingAmount == 9990)
        #expect(lines[0].proceeds == 6993)
        // 9990 x 33333 / 100000 = 3329.9667 -> 3330.
        #expect(lines[1].entry.amount == -3330)
        #expect(lines[1].entry.at == refunded)
        #expect(lines[1].proceeds == -2331)  // -3330 x 0.7
        #expect(lines[1].commissionPercent == 30)
        let months = try Self.metrics(
            history, from: CivilTime.millis(year: 2026, month: 1, day: 1), to: CivilTime.millis(year: 2026, month: 3, day: 1),
            interval: .month)
        #expect(months.map(\.revenue) == [9990, -3330])
        #expect(months.map(\.proceeds) == [6993, -2331])
        #expect(months.map(\.refunds) == [0, 1])
        // A prorated subscription refund revokes it (handled as full): not active at the end of February.
        #expect(months.map(\.activeSubscriptions) == [1, 0])
        #expect(months[0].mrr == 9990)
        guard case .object(let object) = lines[1].json() else { Issue.record("not an object"); return }
        #expect(
            object.keys == [
                "at", "type", "transactionId", "originalTransactionId", "appTransactionId", "productId", "storefront", "currency",
                "amount", "reportingAmount", "commissionRate", "proceeds",
            ])
        #expect(object["commissionRate"] == .double(0.3))
    }

    @Test func sumsPastSixtyFourBitsAreExactWithinAndNearestWithoutNeverWrapped() throws {
        let history = History()
        let month = CivilTime.millis(year: 2026, month: 1, day: 1)
        // Two sales of the largest price: past 64 bits, shown as the largest number.
        history.add(transaction("2000000000000201", original: Self.otid, purchase: month + Time.day, expires: month + 31 * Time.day, price: Int64.max))
        history.add(
            transaction(
                "3000000000000201", product: Product.lifetime, purchase: month + 2 * Time.day, price: Int64.max, type: "Non-Consumable"))
        // In February the same sale and its full refund net to exactly zero.
        let february = CivilTime.millis(year: 2026, month: 2, day: 1)
        history.add(
            transaction(
                "3000000000000202", product: Product.lifetime, purchase: february + Time.day, price: Int64.max, type: "Non-Consumable"))
        history.add(
            transaction(
                "3000000000000202", product: Product.lifetime, purchase: february + Time.day, signed: february + 2 * Time.day,
                revoked: february + 2 * Time.day, revocationType: "REFUND_FULL", price: Int64.max, type: "Non-Consumable"))
        history.add(
            transaction("3000000000000203", product: Product.lifetime, purchase: february + 3 * Time.day, price: 9990, type: "Non-Consumable"))
        let months = try Self.metrics(history, from: month, to: CivilTime.millis(year: 2026, month: 3, day: 1), interval: .month)
        #expect(months.map(\.revenue) == [Int64.max, 9990])
        #expect(months[0].proceeds == Int64.max)
        #expect(months[1].proceeds == 6993)
    }

    @Test func aHalfMilliunitRefundRoundsAwayFromZero() {
        #expect(RevenueFacts.refundAmount(price: 999, type: .refundProrated, percentage: 50_000) == -500)
        #expect(RevenueFacts.refundAmount(price: 999, type: .refundFull, percentage: nil) == -999)
        #expect(RevenueFacts.refundAmount(price: 999, type: nil, percentage: nil) == -999)
        #expect(RevenueSettings.proceeds(-5, commissionPercent: 30) == -4)  // -3.5 -> -4
        #expect(RevenueSettings.proceeds(5, commissionPercent: 30) == 4)
    }

    @Test func aReversedRefundIsALineOfItsOwnAndThePastStaysPut() throws {
        let history = History()
        let sold = CivilTime.millis(year: 2026, month: 1, day: 10)
        let refunded = CivilTime.millis(year: 2026, month: 1, day: 25)
        let reversed = CivilTime.millis(year: 2026, month: 2, day: 2)
        history.add(transaction("3000000000000201", product: Product.lifetime, purchase: sold, price: 29990))
        history.add(
            transaction(
                "3000000000000201", product: Product.lifetime, purchase: sold, signed: refunded, revoked: refunded,
                revocationType: "REFUND_FULL", price: 29990))
        history.add(transaction("3000000000000201", product: Product.lifetime, purchase: sold, signed: reversed, price: 29990))
        let lines = Self.ledger(history)
        #expect(lines.map(\.entry.type) == [.sale, .refund, .refundReversed])
        #expect(lines.map(\.entry.amount) == [29990, -29990, 29990])
        #expect(lines.map(\.entry.at) == [sold, refunded, reversed])
        let months = try Self.metrics(
            history, from: CivilTime.millis(year: 2026, month: 1, day: 1), to: CivilTime.millis(year: 2026, month: 3, day: 1),
            interval: .month)
        #expect(months.map(\.revenue) == [0, 29990])
        #expect(months.map(\.refunds) == [1, 0])
    }

    @Test func theCommissionIs15PercentFromASubscribersSecondYear() throws {
        let history = History()
        let start = CivilTime.millis(year: 2025, month: 1, day: 1)
        // The first paid period, then renewals 364 and 365 days after it.
        history.add(transaction("2000000000000301", original: Self.otid, purchase: start, expires: start + 30 * Time.day))
        history.add(
            transaction("2000000000000302", original: Self.otid, purchase: start + 364 * Time.day, expires: start + 365 * Time.day))
        history.add(
            transaction("2000000000000303", original: Self.otid, purchase: start + 365 * Time.day, expires: start + 395 * Time.day))
        let lines = Self.ledger(history)
        #expect(lines.map(\.commissionPercent) == [30, 30, 15])
        #expect(lines.map(\.proceeds) == [6993, 6993, 8492])  // 9990 x 0.85 = 8491.5 -> 8492
        let small = Self.ledger(history, settings: RevenueSettings(smallBusinessProgram: true))
        #expect(small.map(\.commissionPercent) == [15, 15, 15])
        #expect(small[0].json()["commissionRate"] == .double(0.15))
    }

    @Test func aTrialThatConverts() throws {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 3, day: 2)  // a Monday
        history.add(
            transaction(
                "2000000000000401", original: Self.otid, purchase: start, expires: start + 7 * Time.day, offerType: 1,
                offerDiscountType: "FREE_TRIAL", price: 0))
        history.add(
            transaction("2000000000000402", original: Self.otid, purchase: start + 7 * Time.day, expires: start + 37 * Time.day))
        let lines = Self.ledger(history)
        #expect(lines.count == 1)  // the free trial sold nothing
        let weeks = try Self.metrics(history, from: start, to: start + 21 * Time.day, interval: .week)
        #expect(weeks.map(\.newTrials) == [1, 0, 0])
        #expect(weeks.map(\.newSubscriptions) == [0, 1, 0])
        #expect(weeks.map(\.trialConversions) == [0, 1, 0])
        #expect(weeks.map(\.activeTrials) == [1, 0, 0])
        #expect(weeks.map(\.activeSubscriptions) == [0, 1, 1])
        #expect(weeks.map(\.mrr) == [0, 9990, 9990])
        #expect(weeks.map(\.revenue) == [0, 9990, 0])
        // Expiry at day 37: the month's end sees it expired; one expiration, not voluntary (no renewal info).
        let days = try Self.metrics(history, from: start + 36 * Time.day, to: start + 38 * Time.day, interval: .day)
        #expect(days.map(\.activeSubscriptions) == [1, 0])
        #expect(days.map(\.expirations) == [0, 1])
        #expect(days.map(\.expirationsVoluntary) == [0, 0])
    }

    @Test func voluntaryExpirationsCount() throws {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 3, day: 1)
        history.add(transaction("2000000000000501", original: Self.otid, purchase: start, expires: start + 30 * Time.day))
        history.add(renewal(autoRenew: false, intent: 1, signed: start + 10 * Time.day))
        let months = try Self.metrics(
            history, from: start, to: CivilTime.millis(year: 2026, month: 5, day: 1), interval: .month)
        #expect(months.map(\.expirations) == [1, 0])
        #expect(months.map(\.expirationsVoluntary) == [1, 0])
    }

    @Test func aCurrencyWithoutARateIsNullAndLeftOutOfTheSums() throws {
        let history = History()
        let sold = CivilTime.millis(year: 2026, month: 1, day: 5)
        history.add(transaction("3000000000000601", product: Product.lifetime, purchase: sold, price: 4990, currency: "EUR"))
        history.add(transaction("3000000000000602", product: Product.lifetime, purchase: sold + 1, price: 1200_000, currency: "JPY"))
        history.add(transaction("3000000000000603", product: Product.lifetime, purchase: sold + 2, price: 999, currency: "USD"))
        let settings = try Self.rates("2026-01-01,JPY,0.0067\n")
        let (lines, missing) = RevenueLedger.lines(of: [Self.facts(history)], settings: settings)
        #expect(missing == ["EUR"])
        #expect(lines.map(\.reportingAmount) == [nil, 8040, 999])
        #expect(lines[0].proceeds == nil)
        #expect(lines[0].json()["reportingAmount"] == .null)
        let months = try Self.metrics(
            history, from: CivilTime.millis(year: 2026, month: 1, day: 1), to: CivilTime.millis(year: 2026, month: 2, day: 1),
            interval: .month, settings: settings)
        #expect(months[0].revenue == 8040 + 999)
        #expect(months[0].proceeds == 5628 + 699)  // 8040 x 0.7, 999 x 0.7 = 699.3
    }

    @Test func mrrConvertsEachPeriodToAMonthAndRoundsOnce() throws {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 4, day: 1)
        // A yearly subscription (rules say P1Y) and a weekly one (read from its dates), in EUR at 1.1.
        history.add(
            transaction(
                "2000000000000701", original: "2000000000000701", product: Product.yearly, purchase: start,
                expires: start + 365 * Time.day, price: 59_990, currency: "EUR"))
        history.add(
            transaction(
                "2000000000000702", original: "2000000000000702", product: Product.basic, purchase: start,
                expires: start + 7 * Time.day, price: 1_990, currency: "EUR"))
        var rules = testRules
        rules.products[Product.yearly]?.period = .oneYear
        let settings = try Self.rates("2026-01-01,EUR,1.1\n")
        let days = try Self.metrics(history, from: start, to: start + Time.day, interval: .day, settings: settings, rules: rules)
        // 65989 / 12 + 2189 x 52 / 12 = 5499.0833 + 9485.6667 = 14984.75 -> 14985.
        #expect(days[0].mrr == 14985)
        #expect(days[0].activeSubscriptions == 2)
        #expect(BillingPeriod.nearest(toMilliseconds: 31 * Time.day) == .oneMonth)
        #expect(BillingPeriod.nearest(toMilliseconds: 92 * Time.day) == .threeMonths)
        #expect(BillingPeriod.nearest(toMilliseconds: 366 * Time.day) == .oneYear)
        #expect(BillingPeriod.nearest(toMilliseconds: 8 * Time.day) == .oneWeek)
    }

    @Test func gracePeriodCountsAsActiveAndFamilySharingAndSandboxDoNot() throws {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 5, day: 1)
        history.add(transaction("2000000000000801", original: Self.otid, purchase: start, expires: start + 30 * Time.day))
        history.add(renewal(retry: true, grace: start + 36 * Time.day, signed: start + 30 * Time.day))
        history.add(
            transaction(
                "2000000000000811", original: "2000000000000811", purchase: start, expires: start + 90 * Time.day,
                ownership: "FAMILY_SHARED"))
        let days = try Self.metrics(history, from: start + 29 * Time.day, to: start + 37 * Time.day, interval: .day)
        #expect(days.map(\.activeSubscriptions) == [1, 1, 1, 1, 1, 1, 1, 0])
        #expect(Self.ledger(history).count == 1)

        let sandbox = History()
        sandbox.add(
            transaction("2000000000000901", original: Self.otid, purchase: start, expires: start + 30 * Time.day, environment: "Sandbox"))
        #expect(Self.ledger(sandbox).isEmpty)
        #expect(try Self.metrics(sandbox, from: start, to: start + Time.day, interval: .day)[0].activeSubscriptions == 0)
    }

    /// A month renewed and then upgraded part-way: it stays active (and in the MRR) until
    /// the upgrade is bought, though its later version is marked upgraded.
    @Test func aRenewedMonthUpgradedLaterStaysActiveUntilTheUpgrade() throws {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 5, day: 1)
        history.add(transaction("2000000000000701", original: Self.otid, purchase: start, expires: start + 30 * Time.day))
        history.add(
            transaction(
                "2000000000000702", original: Self.otid, purchase: start + 30 * Time.day, expires: start + 60 * Time.day,
                signed: start + 40 * Time.day, upgraded: true))
        history.add(
            transaction(
                "2000000000000703", original: Self.otid, product: Product.premium, purchase: start + 40 * Time.day,
                expires: start + 70 * Time.day, price: 19990))
        let days = try Self.metrics(history, from: start + 29 * Time.day, to: start + 41 * Time.day, interval: .day)
        #expect(days.map(\.activeSubscriptions) == Array(repeating: 1, count: 12))
        #expect(days.map(\.mrr) == Array(repeating: 9990, count: 11) + [19990])
    }

    @Test func factsSurviveTheirCodec() throws {
        let history = RevenueTests.subscriptionWithEverything()
        let facts = Self.facts(history)
        #expect(!facts.entries.isEmpty && !facts.subscriptions.isEmpty)
        #expect(try RevenueFactsCodec.decode(RevenueFactsCodec.encode(facts)) == facts)
    }

    static func subscriptionWithEverything() -> History {
        let history = History()
        let start = CivilTime.millis(year: 2026, month: 1, day: 1)
        history.add(
            transaction(
                "2000000000001001", original: Self.otid, purchase: start, expires: start + 7 * Time.day, offerType: 1,
                offerDiscountType: "FREE_TRIAL", price: 0))
        history.add(transaction("2000000000001002", original: Self.otid, purchase: start + 7 * Time.day, expires: start + 37 * Time.day))
        history.add(
            transaction(
                "2000000000001002", original: Self.otid, purchase: start + 7 * Time.day, expires: start + 37 * Time.day,
                signed: start + 9 * Time.day, revoked: start + 9 * Time.day, revocationType: "REFUND_FULL"))
        history.add(transaction("2000000000001002", original: Self.otid, purchase: start + 7 * Time.day, expires: start + 37 * Time.day, signed: start + 12 * Time.day))
        history.add(renewal(autoRenew: false, intent: 1, signed: start + 20 * Time.day))
        return history
    }
}
