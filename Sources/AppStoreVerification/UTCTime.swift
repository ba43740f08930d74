/// Calendar arithmetic for integer milliseconds since 1970 (UTC), without Foundation:
/// App Store dates stay `Int64`, and formatting is only needed for error messages.
enum UTCTime {
    /// Milliseconds since 1970-01-01T00:00:00Z of a proleptic Gregorian UTC date and time.
    static func millis(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64 {
        let days = daysFromCivil(year: year, month: month, day: day)
        return (Int64(days) * 86_400 + Int64(hour) * 3_600 + Int64(minute) * 60 + Int64(second)) * 1_000
    }

    /// `2024-10-17T03:44:11.128Z`.
    static func iso8601(_ millis: Int64) -> String {
        let totalSeconds = millis >= 0 ? millis / 1_000 : (millis - 999) / 1_000
        let fraction = Int(millis - totalSeconds * 1_000)
        let days = totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400
        let secondsOfDay = Int(totalSeconds - days * 86_400)
        let (year, month, day) = civilFromDays(Int(days))
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondsOfDay / 3_600, 2)):"
            + "\(pad(secondsOfDay / 60 % 60, 2)):\(pad(secondsOfDay % 60, 2)).\(pad(fraction, 3))Z"
    }

    // Howard Hinnant's algorithms (http://howardhinnant.github.io/date_algorithms.html).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
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
