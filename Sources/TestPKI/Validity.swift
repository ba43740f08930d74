/// A certificate's validity period, in milliseconds since 1970 (UTC), as App Store dates are.
///
/// X.509 stores whole seconds: milliseconds are truncated.
public struct Validity: Sendable, Hashable {
    /// The first valid moment (ms since 1970).
    public var notBefore: Int64
    /// The moment the certificate expires (ms since 1970).
    public var notAfter: Int64

    /// A validity period from `notBefore` to `notAfter`.
    public init(notBefore: Int64, notAfter: Int64) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// 2015-01-01T00:00:00Z to 2045-01-01T00:00:00Z.
    public static let standard = Validity(notBefore: 1_420_070_400_000, notAfter: 2_366_841_600_000)
}
