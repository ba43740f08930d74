internal import EntitlementCore

/// X.509 times as integer milliseconds since 1970 (UTC), without Foundation: App Store
/// dates stay `Int64`, and formatting is only needed for error messages. The arithmetic
/// is the core's ``CivilTime``.
enum UTCTime {
    /// Milliseconds since 1970-01-01T00:00:00Z of a proleptic Gregorian UTC date and time.
    static func millis(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64 {
        CivilTime.millis(
            year: Int64(year), month: Int64(month), day: Int64(day), hour: Int64(hour), minute: Int64(minute), second: Int64(second))
    }

    /// `2024-10-17T03:44:11.128Z`.
    static func iso8601(_ millis: Int64) -> String { CivilTime.iso8601(millis) }
}
