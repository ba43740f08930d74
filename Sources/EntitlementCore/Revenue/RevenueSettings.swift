/// The configuration's `revenue` section (specification section 14): the currency the
/// figures are reported in, the team's exchange rates, and the commission program.
public struct RevenueSettings: Sendable, Hashable {
    /// The ISO 4217 code figures are reported in (its own rate is 1).
    public var reportingCurrency: String
    /// The team's rates into ``reportingCurrency``.
    public var exchangeRates: ExchangeRates
    /// Whether the App Store Small Business Program applies (commission 0.15 on every sale).
    public var smallBusinessProgram: Bool

    /// USD, no rates, no Small Business Program: what applies without a `revenue` section.
    public init(reportingCurrency: String = "USD", exchangeRates: ExchangeRates = ExchangeRates(), smallBusinessProgram: Bool = false) {
        self.reportingCurrency = reportingCurrency
        self.exchangeRates = exchangeRates
        self.smallBusinessProgram = smallBusinessProgram
    }

    /// The rate of `currency` into the reporting currency on the UTC day of `at`
    /// (1 for the reporting currency), or `nil` when none is given for that day.
    public func rate(of currency: String, at: Int64) -> ExchangeRates.Rate? {
        currency == reportingCurrency ? .one : exchangeRates.rate(of: currency, at: at)
    }

    /// `amount` (milliunits of `currency`) in milliunits of the reporting currency, at the
    /// rate of the UTC day of `at`, rounded half away from zero; `nil` without a rate.
    public func reportingAmount(_ amount: Int64, currency: String, at: Int64) -> Int64? {
        rate(of: currency, at: at)?.convert(amount)
    }

    /// The commission Apple keeps, in hundredths: 15 with the Small Business Program or
    /// for a subscription's transaction bought a year or more into it, else 30.
    public func commissionPercent(reduced: Bool) -> Int64 {
        smallBusinessProgram || reduced ? 15 : 30
    }

    /// `reportingAmount` × (1 − commission), rounded half away from zero.
    public static func proceeds(_ reportingAmount: Int64, commissionPercent: Int64) -> Int64 {
        Rounding.scale(reportingAmount, by: Int128(100 - commissionPercent), over: 100)
    }
}
