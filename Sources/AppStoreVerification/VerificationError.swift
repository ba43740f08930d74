/// Why a signed App Store input was refused.
///
/// ``code`` is stable and machine-readable, named as Apple's App Store Server
/// libraries name their verification statuses (plus ``Code/malformedInput``);
/// ``message`` says, for a person, what exactly was wrong and where.
///
/// ```swift
/// do {
///     let notification = try verifier.verifyNotification(jws)
/// } catch {
///     print(error.code.rawValue, error.message)   // INVALID_ENVIRONMENT environment Sandbox does not match ...
/// }
/// ```
public struct VerificationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A verification error code. New codes may be added; match on the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as printed and stored, for example `INVALID_CHAIN`.
        public let rawValue: String

        /// A code from its printed form; prefer the static members.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The JWS does not verify: wrong `alg`, missing or malformed `x5c`, a signature that
        /// does not match, or a payload or signature segment that was altered.
        public static let verificationFailure = Code(rawValue: "VERIFICATION_FAILURE")
        /// `bundleId` (or, in Production, `appAppleId`) is not the configured app's.
        public static let invalidAppIdentifier = Code(rawValue: "INVALID_APP_IDENTIFIER")
        /// A certificate in `x5c` (or a configured root) is not a base64 DER X.509 certificate.
        public static let invalidCertificate = Code(rawValue: "INVALID_CERTIFICATE")
        /// `x5c` does not hold exactly three certificates (leaf, intermediate, root).
        public static let invalidChainLength = Code(rawValue: "INVALID_CHAIN_LENGTH")
        /// The certificate chain does not verify to a configured root at the payload's signing
        /// time, or lacks Apple's certificate extensions.
        public static let invalidChain = Code(rawValue: "INVALID_CHAIN")
        /// The payload's environment is not the configured one.
        public static let invalidEnvironment = Code(rawValue: "INVALID_ENVIRONMENT")
        /// The input is not a well-formed compact JWS, or its verified payload is not the
        /// App Store object it must be.
        public static let malformedInput = Code(rawValue: "MALFORMED_INPUT")

        /// The raw value.
        public var description: String { rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, in words a person can act on.
    public var message: String

    /// An error with `code` and a `message` for people.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error with `code` and a `message` for people.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// The same error, its message prefixed with where it happened (for nested JWS).
    func prefixed(_ context: String) -> VerificationError {
        VerificationError(code, context + ": " + message)
    }

    static func verificationFailure(_ message: String) -> VerificationError { VerificationError(.verificationFailure, message) }
    static func invalidCertificate(_ message: String) -> VerificationError { VerificationError(.invalidCertificate, message) }
    static func invalidChain(_ message: String) -> VerificationError { VerificationError(.invalidChain, message) }
    static func malformed(_ message: String) -> VerificationError { VerificationError(.malformedInput, message) }
}
