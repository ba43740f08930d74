extension TestPKI {
    /// The elliptic curve of a key.
    public enum Curve: String, Sendable, Hashable {
        /// P-256 (`prime256v1`), the curve of Apple's leaf and of ES256.
        case p256 = "P-256"
        /// P-384 (`secp384r1`), the curve of Apple's root and intermediate.
        case p384 = "P-384"
    }

    /// How to build a test PKI. The defaults make one shaped like Apple's; change a field to
    /// get a broken variant for a test.
    ///
    /// ```swift
    /// let expired = TestPKI(.init(leafValidity: Validity(notBefore: 1_600_000_000_000, notAfter: 1_650_000_000_000)))
    /// let noOID = TestPKI(.leafWithoutAppleOID)
    /// ```
    public struct Options: Sendable {
        /// When the root is valid.
        public var rootValidity: Validity
        /// When the intermediate is valid.
        public var intermediateValidity: Validity
        /// When the leaf is valid (App Store payloads are checked at their signedDate).
        public var leafValidity: Validity
        /// Whether the leaf carries Apple's receipt-signing extension 1.2.840.113635.100.6.11.1.
        public var leafHasAppleOID: Bool
        /// Whether the intermediate carries Apple's WWDR extension 1.2.840.113635.100.6.2.1.
        public var intermediateHasAppleOID: Bool
        /// The leaf key's curve; Apple's is P-256 (anything else cannot sign ES256).
        public var leafCurve: Curve
        /// Common name of the root.
        public var rootName: String
        /// Common name of the intermediate.
        public var intermediateName: String
        /// Common name of the leaf.
        public var leafName: String

        /// Options; every default is Apple-shaped.
        public init(
            rootValidity: Validity = .standard,
            intermediateValidity: Validity = .standard,
            leafValidity: Validity = .standard,
            leafHasAppleOID: Bool = true,
            intermediateHasAppleOID: Bool = true,
            leafCurve: Curve = .p256,
            rootName: String = "Test Root CA - G3",
            intermediateName: String = "Test Worldwide Developer Relations Certification Authority",
            leafName: String = "Test ECC Mac App Store and iTunes Store Receipt Signing"
        ) {
            self.rootValidity = rootValidity
            self.intermediateValidity = intermediateValidity
            self.leafValidity = leafValidity
            self.leafHasAppleOID = leafHasAppleOID
            self.intermediateHasAppleOID = intermediateHasAppleOID
            self.leafCurve = leafCurve
            self.rootName = rootName
            self.intermediateName = intermediateName
            self.leafName = leafName
        }

        /// Shaped like Apple's, valid 2015 to 2045.
        public static var standard: Options { Options() }
        /// A leaf without 1.2.840.113635.100.6.11.1.
        public static var leafWithoutAppleOID: Options { Options(leafHasAppleOID: false) }
        /// An intermediate without 1.2.840.113635.100.6.2.1.
        public static var intermediateWithoutAppleOID: Options { Options(intermediateHasAppleOID: false) }
        /// A leaf valid only during `validity` (for example already expired at a payload's signedDate).
        public static func leafValid(_ validity: Validity) -> Options { Options(leafValidity: validity) }
    }
}
