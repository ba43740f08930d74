import EntitlementCore

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
package enum TimeArgument {
    /// The smallest integer accepted: 100000000000 ms is 1973-03-03T09:46:40Z.
    package static let smallestMilliseconds: Int64 = 100_000_000_000

    /// Why a moment was refused: a sentence to show after the flag's name.
    package struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    /// Milliseconds since 1970 UTC for `text`.
    /// - Throws: ``Invalid`` with a message saying what was expected.
    package static func parse(_ text: String) throws(Invalid) -> Int64 {
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
    package static func iso8601(_ millis: Int64) -> String { CivilTime.iso8601(millis) }

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
        guard i == b.count, (1...12).contains(month), day >= 1, day <= CivilTime.daysIn(month: month, year: year), hour <= 23,
            minute <= 59, second <= 59
        else { return nil }
        return CivilTime.millis(year: year, month: month, day: day, hour: hour, minute: minute, second: second, millisecond: millis)
    }
}
