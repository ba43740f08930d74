/// The team's exchange rates (specification section 14): one unit of a currency is
/// `rate` units of the reporting currency from a UTC day on, until that currency's
/// next line. The engine never fetches rates.
public struct ExchangeRates: Sendable, Hashable {
    /// A rate as an exact decimal: `mantissa` / 10^`scale`.
    public struct Rate: Sendable, Hashable, CustomStringConvertible {
        public var mantissa: Int64
        public var scale: Int

        public init(mantissa: Int64, scale: Int) {
            self.mantissa = mantissa
            self.scale = scale
        }

        /// The rate of the reporting currency itself.
        public static let one = Rate(mantissa: 1, scale: 0)

        /// `amount` × this rate, rounded half away from zero.
        public func convert(_ amount: Int64) -> Int64 {
            var denominator: Int128 = 1
            for _ in 0..<scale { denominator *= 10 }
            return Rounding.scale(amount, by: Int128(mantissa), over: denominator)
        }

        public var description: String {
            guard scale > 0 else { return String(mantissa) }
            var digits = String(mantissa)
            while digits.count <= scale { digits = "0" + digits }
            let cut = digits.index(digits.endIndex, offsetBy: -scale)
            return digits[..<cut] + "." + digits[cut...]
        }
    }

    /// Each currency's rates, by the first day (ms since 1970, midnight UTC) they hold, ascending.
    public private(set) var byCurrency: [String: [(day: Int64, rate: Rate)]]

    public init() { byCurrency = [:] }

    public static func == (lhs: ExchangeRates, rhs: ExchangeRates) -> Bool {
        guard lhs.byCurrency.keys == rhs.byCurrency.keys else { return false }
        for (currency, list) in lhs.byCurrency {
            guard let other = rhs.byCurrency[currency], other.count == list.count else { return false }
            for (a, b) in zip(list, other) where a.day != b.day || a.rate != b.rate { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        for currency in byCurrency.keys.sorted() {
            hasher.combine(currency)
            for entry in byCurrency[currency]! {
                hasher.combine(entry.day)
                hasher.combine(entry.rate)
            }
        }
    }

    /// Adds a rate for `currency` from `day` on (midnight UTC, ms since 1970).
    public mutating func add(currency: String, day: Int64, rate: Rate) {
        var list = byCurrency[currency] ?? []
        let index = list.firstIndex { $0.day > day } ?? list.count
        list.insert((day, rate), at: index)
        byCurrency[currency] = list
    }

    /// The rate of `currency` in force on the UTC day of `at`, or `nil` when the file
    /// gives none for that day.
    public func rate(of currency: String, at: Int64) -> Rate? {
        guard let list = byCurrency[currency], !list.isEmpty else { return nil }
        let day = Self.dayStart(of: at)
        // The last line whose day is at or before `day`.
        var low = 0
        var high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle].day <= day { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : list[low - 1].rate
    }

    /// Midnight UTC of the day of `at`.
    public static func dayStart(of at: Int64) -> Int64 {
        let day: Int64 = 86_400_000
        return at >= 0 ? at / day * day : (at - day + 1) / day * day
    }
}

/// Why an exchange-rate file was refused: the line and the field, and what is wrong.
public struct ExchangeRatesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line number.
    public var line: Int
    /// `date`, `currency` or `rate`; `nil` when the line as a whole is malformed.
    public var field: String?
    public var reason: String

    public init(line: Int, field: String?, reason: String) {
        self.line = line
        self.field = field
        self.reason = reason
    }

    public var description: String {
        "line \(line)" + (field.map { ", field \($0)" } ?? "") + ": " + reason
    }
}

extension ExchangeRates {
    /// Reads a CSV file of `date,currency,rate` lines (a first line `date,currency,rate` is
    /// a header; blank lines are skipped).
    /// - Throws: ``ExchangeRatesError`` naming the line and the field.
    public init(csv text: String) throws(ExchangeRatesError) {
        self.init()
        var seen = Set<String>()
        var number = 0
        // "\r\n" is one Character: both line ends split.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            if number == 1, line.hasPrefix("\u{FEFF}") { line = line.dropFirst() }
            let trimmed = line.trimmingSpaces
            if trimmed.isEmpty { continue }
            let fields = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
            if number == 1, fields.map({ $0.lowercased() }) == ["date", "currency", "rate"] { continue }
            guard fields.count == 3 else {
                throw ExchangeRatesError(
                    line: number, field: nil,
                    reason: "expected 3 fields date,currency,rate (e.g. 2026-01-01,EUR,1.0843), found \(fields.count): \"\(trimmed)\"")
            }
            guard let day = Self.parseDay(fields[0]) else {
                throw ExchangeRatesError(line: number, field: "date", reason: "\"\(fields[0])\" is not a date YYYY-MM-DD")
            }
            let currency = fields[1]
            guard !currency.isEmpty, currency.utf8.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) }) else {
                throw ExchangeRatesError(
                    line: number, field: "currency", reason: "\"\(currency)\" is not a currency code such as EUR (upper-case letters)")
            }
            let rate = try Self.parseRate(fields[2], line: number)
            guard seen.insert(currency + "@" + String(day)).inserted else {
                throw ExchangeRatesError(line: number, field: "date", reason: "a second rate for \(currency) on \(fields[0])")
            }
            add(currency: currency, day: day, rate: rate)
        }
    }

    /// `YYYY-MM-DD` as midnight UTC in ms since 1970.
    static func parseDay(_ text: String) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
            let year = Int64(parts[0]), let month = Int64(parts[1]), let day = Int64(parts[2]),
            (1...12).contains(month), day >= 1, day <= CivilTime.daysIn(month: month, year: year)
        else { return nil }
        return CivilTime.millis(year: year, month: month, day: day)
    }

    /// A positive decimal such as `1.0843` (at most 18 significant digits).
    static func parseRate(_ text: String, line: Int) throws(ExchangeRatesError) -> Rate {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let malformed = ExchangeRatesError(line: line, field: "rate", reason: "\"\(text)\" is not a decimal number such as 1.0843")
        guard !text.isEmpty, parts.count <= 2 else { throw malformed }
        if text.hasPrefix("-") {
            throw ExchangeRatesError(line: line, field: "rate", reason: "\(text) is negative: a rate must be greater than 0")
        }
        let whole = String(parts[0])
        let fraction = parts.count == 2 ? String(parts[1]) : ""
        guard !(whole.isEmpty && fraction.isEmpty), whole.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            fraction.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), parts.count == 1 || !fraction.isEmpty
        else { throw malformed }
        var digits = Substring(whole + fraction).drop { $0 == "0" }
        var scale = fraction.count
        // Trailing zeros of the fraction add nothing.
        while scale > 0, digits.hasSuffix("0") {
            digits = digits.dropLast()
            scale -= 1
        }
        guard !digits.isEmpty else {
            throw ExchangeRatesError(line: line, field: "rate", reason: "\(text) is zero: a rate must be greater than 0")
        }
        guard digits.count <= 18, let mantissa = Int64(digits) else {
            throw ExchangeRatesError(line: line, field: "rate", reason: "\(text) has more than 18 significant digits")
        }
        return Rate(mantissa: mantissa, scale: scale)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        var view = self
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
