/// The billing period of an auto-renewable subscription, as `metrics` reads it to turn a
/// price into monthly recurring revenue (specification section 14).
public enum BillingPeriod: String, Sendable, Hashable, CaseIterable {
    case oneWeek = "P1W"
    case oneMonth = "P1M"
    case twoMonths = "P2M"
    case threeMonths = "P3M"
    case sixMonths = "P6M"
    case oneYear = "P1Y"

    /// A price per period times this is twelve times the price per month: a week is
    /// ×52/12, a month ×1, two months /2, three /3, six /6, a year /12. MRR is summed in
    /// twelfths, so every period adds an exact integer and the sum is rounded once.
    public var twelfthsPerMonthFactor: Int64 {
        switch self {
        case .oneWeek: return 52
        case .oneMonth: return 12
        case .twoMonths: return 6
        case .threeMonths: return 4
        case .sixMonths: return 2
        case .oneYear: return 1
        }
    }

    /// The period's nominal length in milliseconds (a month is a twelfth of 365.2425 days).
    var nominalMilliseconds: Int64 {
        let day: Int64 = 86_400_000
        let month: Int64 = 2_629_746_000  // 365.2425 days / 12
        switch self {
        case .oneWeek: return 7 * day
        case .oneMonth: return month
        case .twoMonths: return 2 * month
        case .threeMonths: return 3 * month
        case .sixMonths: return 6 * month
        case .oneYear: return 12 * month
        }
    }

    /// The period nearest to a transaction's `expiresDate` - `purchaseDate` (the shorter one on a tie).
    public static func nearest(toMilliseconds duration: Int64) -> BillingPeriod {
        var best = BillingPeriod.oneWeek
        var bestDistance = Int64.max
        for period in allCases {
            let distance = abs(duration - period.nominalMilliseconds)
            if distance < bestDistance {
                best = period
                bestDistance = distance
            }
        }
        return best
    }
}
