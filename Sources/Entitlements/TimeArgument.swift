/// A moment given by a person or a program (`--at`, `--until`, `--start`, `?at=`):
/// integer milliseconds since 1970 UTC, or an ISO 8601 UTC time.
///
/// This is the one place that reads such a moment; every command and endpoint that
/// takes one uses ``parse(_:)``, so they all accept and refuse the same things:
/// - `1763683200000`: milliseconds since 1970-01-01T00:00:00Z;
/// - `2026-11-23T10:00:00Z`, `2026-11-23T10:00:00.250Z`, `2026-11-23T10:00:00+00:00`:
///   UTC, with optional fractional seconds (up to milliseconds);
/// - an integer below ``smallestMilliseconds`` (a date before 1973 in milliseconds, so
///   almost surely seconds) is refused, as is anything else.
public enum TimeArgument {
    /// The smallest integer accepted: 100000000000 ms is 1973-03-03T09:46:40Z.
    public static let smallestMilliseconds: Int64 = 100_000_000_000

    /// Why a moment was refused: a sentence to show after the flag's name.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Milliseconds since 1970 UTC for `text`.
    /// - Throws: ``Invalid`` with a message saying what was expected.
    public static func parse(_ text: String) throws(Invalid) -> Int64 {
        let bytes = Array(text.utf8)
        if !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let value = Int64(text) else {
                throw Invalid(message: "expects milliseconds since 1970 or an ISO 8601 UTC time, got \"\(text)\" (too large)")
            }
            guard value >= smallestMilliseconds else {
                throw Invalid(
                    message: "expects milliseconds since 1970 (13 digits today) or an ISO 8601 UTC time like 2026-11-23T10:00:00Z; "
                        + "\(text) would be before 1973: seconds? (multiply by 1000)")
            }
            return value
        }
        if let value = iso8601(bytes) { return value }
        throw Invalid(
            message: "expects milliseconds since 1970 (e.g. 1763892000000) or an ISO 8601 UTC time (e.g. 2026-11-23T10:00:00Z), got \"\(text)\"")
    }

    /// `2026-11-23T10:00:00.000Z` for milliseconds since 1970 UTC.
    public static func iso8601(_ millis: Int64) -> String {
        let seconds = millis >= 0 ? millis / 1_000 : (millis - 999) / 1_000
        let fraction = Int(millis - seconds * 1_000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(Int64(secondOfDay / 3_600), 2)):"
            + "\(pad(Int64(secondOfDay / 60 % 60), 2)):\(pad(Int64(secondOfDay % 60), 2)).\(pad(Int64(fraction), 3))Z"
    }

    /// `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+00:00|-00:00)`, else `nil`.
    static func iso8601(_ b: [UInt8]) -> Int64? {
        var i = 0
        func digits(_ count: Int) -> Int64? {
            guard i + count <= b.count else { return nil }
            var value: Int64 = 0
            for k in i..<(i + count) {
                guard b[k] >= 0x30, b[k] <= 0x39 else { return nil }
                value = value * 10 + Int64(b[k] - 0x30)
            }
            i += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard i < b.count, characters.utf8.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2), expect("Tt"),
            let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2)
        else { return nil }
        var millis: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var count = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if count < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                count += 1
                i += 1
            }
            guard count >= 1, count <= 9 else { return nil }
            if count < 3 { for _ in count..<3 { millis *= 10 } }
        }
        if expect("Zz") {
        } else if expect("+-") {
            guard let offsetHours = digits(2), expect(":"), let offsetMinutes = digits(2), offsetHours == 0, offsetMinutes == 0
            else { return nil }
        } else {
            return nil
        }
        guard i == b.count, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 59
        else { return nil }
        let days = self.days(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1_000 + millis
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's algorithms (http://howardhinnant.github.io/date_algorithms.html).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
