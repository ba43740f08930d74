/// Civil (proleptic Gregorian, UTC) dates and times to and from integer milliseconds since
/// 1970-01-01T00:00:00Z: the one calendar of the package, pure arithmetic with no clock and
/// no Foundation. X.509 validity times (the verifier), ISO 8601 moments given on the command
/// line and in requests (`TimeArgument` in the facade) and the texts that show a moment
/// all go through it.
///
/// Days and dates follow Howard Hinnant's algorithms
/// (http://howardhinnant.github.io/date_algorithms.html), exact for every `Int64` day
/// count a date of years -10^14...10^14 gives.
public enum CivilTime {
    /// Milliseconds since 1970 of a civil date and time of day (no range checks: a month
    /// 1...12, a day that exists in it, and `hour` 0...23 etc. are the caller's to ensure).
    public static func millis(
        year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0, millisecond: Int64 = 0
    ) -> Int64 {
        ((days(year: year, month: month, day: day) * 24 + hour) * 60 + minute) * 60_000 + second * 1_000 + millisecond
    }

    /// The civil date and time of day of `millis` (rounded down to the millisecond's day,
    /// also before 1970).
    public static func components(_ millis: Int64)
        -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64)
    {
        let seconds = millis >= 0 ? millis / 1_000 : (millis - 999) / 1_000
        let millisecond = millis - seconds * 1_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = date(days: days)
        return (year, month, day, secondOfDay / 3_600, secondOfDay / 60 % 60, secondOfDay % 60, millisecond)
    }

    /// `2024-10-17T03:44:11.128Z`: the ISO 8601 UTC text of `millis`, always with milliseconds.
    public static func iso8601(_ millis: Int64) -> String {
        let t = components(millis)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(t.year, 4))-\(pad(t.month, 2))-\(pad(t.day, 2))T\(pad(t.hour, 2)):"
            + "\(pad(t.minute, 2)):\(pad(t.second, 2)).\(pad(t.millisecond, 3))Z"
    }

    /// How many days `month` (1...12) of `year` has.
    public static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a civil date.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date `days` after 1970-01-01 (before it when negative).
    public static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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
