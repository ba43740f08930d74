/// How `metrics` cuts its range: calendar-aligned UTC days, weeks from Monday, or months.
public enum MetricsInterval: String, Sendable, Hashable, CaseIterable {
    case day
    case week
    case month

    /// The first boundary after `at`: the next midnight, Monday midnight or first of a month (UTC).
    public func nextBoundary(after at: Int64) -> Int64 {
        let dayLength: Int64 = 86_400_000
        let dayStart = ExchangeRates.dayStart(of: at)
        switch self {
        case .day:
            return dayStart + dayLength
        case .week:
            // 1970-01-01 was a Thursday: day n is a Monday when (n + 3) mod 7 == 0.
            let dayNumber = dayStart / dayLength
            let sinceMonday = ((dayNumber + 3) % 7 + 7) % 7
            return dayStart + (7 - sinceMonday) * dayLength
        case .month:
            let date = CivilTime.components(at)
            let (year, month) = date.month == 12 ? (date.year + 1, Int64(1)) : (date.year, date.month + 1)
            return CivilTime.millis(year: year, month: month, day: 1)
        }
    }
}

/// Why a `metrics` range was refused.
public struct MetricsRangeError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// `from` is after `to`.
        case invalidRange = "INVALID_RANGE"
        /// More intervals than ``MetricsIntervals/maximumCount``.
        case tooManyIntervals = "TOO_MANY_INTERVALS"
    }

    public var code: Code
    public var message: String
    public var description: String { "\(code.rawValue): \(message)" }
}

/// The intervals [s, e) of a `metrics` range (specification section 14).
public enum MetricsIntervals {
    /// The most intervals one range may hold.
    public static let maximumCount = 10_000

    /// The calendar-aligned intervals covering [`from`, `to`), the first and the last cut to them.
    /// - Throws: ``MetricsRangeError`` when `from` is after `to` or the range holds more than 10,000 intervals.
    public static func make(from: Int64, to: Int64, interval: MetricsInterval) throws(MetricsRangeError) -> [(from: Int64, to: Int64)] {
        guard from <= to else {
            throw MetricsRangeError(
                code: .invalidRange,
                message: "--from \(CivilTime.iso8601(from)) is after --to \(CivilTime.iso8601(to)): give the earlier moment first")
        }
        var intervals: [(from: Int64, to: Int64)] = []
        var start = from
        while start < to {
            guard intervals.count < maximumCount else {
                throw MetricsRangeError(
                    code: .tooManyIntervals,
                    message: "from \(CivilTime.iso8601(from)) to \(CivilTime.iso8601(to)) holds more than \(maximumCount) \(interval.rawValue) intervals: shorten the range or use a longer --interval")
            }
            let end = min(interval.nextBoundary(after: start), to)
            intervals.append((start, end))
            start = end
        }
        return intervals
    }
}
