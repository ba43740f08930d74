/// Exact integer division rounded half away from zero, the one rounding of section 14.
public enum Rounding {
    /// `numerator / denominator`, rounded half away from zero (`denominator` > 0).
    public static func halfAwayFromZero(_ numerator: Int128, dividedBy denominator: Int128) -> Int128 {
        let quotient = numerator / denominator
        let remainder = numerator % denominator
        // |remainder| * 2 >= denominator: at or past the half, away from zero.
        if remainder.magnitude * 2 >= denominator.magnitude {
            return numerator < 0 ? quotient - 1 : quotient + 1
        }
        return quotient
    }

    /// `value * numerator / denominator` rounded half away from zero, clamped to `Int64`.
    public static func scale(_ value: Int64, by numerator: Int128, over denominator: Int128) -> Int64 {
        let exact = halfAwayFromZero(Int128(value) * numerator, dividedBy: denominator)
        if exact > Int128(Int64.max) { return Int64.max }
        if exact < Int128(Int64.min) { return Int64.min }
        return Int64(exact)
    }
}
