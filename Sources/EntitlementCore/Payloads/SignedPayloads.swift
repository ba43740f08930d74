/// The bytes a JWS's payload segment encodes (the JSON exactly as signed), kept by
/// the verifier that decoded them, so that the log stores them without decoding the
/// segment a second time. Not part of a signed value's identity: two values that
/// differ only in whether they carry these bytes are equal (the bytes follow from the
/// JWS). `package`: only this package's verifier sets them, so they always are the
/// decoding of the JWS they come with.
package struct SignedBytes: Sendable, Hashable {
    /// The bytes, or `nil` when the value was made by other means than the verifier.
    package var bytes: [UInt8]?
    /// The SHA-256 of the whole JWS (`header.payload.signature`, as received), which the
    /// verifier computed on its way to the signing input's, or `nil` when it did not
    /// (a value made by other means, or an environment that checks no signatures).
    package var jwsDigest: [UInt8]?
    package init(_ bytes: [UInt8]? = nil, jwsDigest: [UInt8]? = nil) {
        self.bytes = bytes
        self.jwsDigest = jwsDigest
    }
    package static func == (lhs: SignedBytes, rhs: SignedBytes) -> Bool { true }
    package func hash(into hasher: inout Hasher) {}
}

/// A signed transaction: the JWS exactly as received, and its decoded payload.
public struct SignedTransaction: Sendable, Hashable {
    public var jws: String
    public var payload: TransactionPayload
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes = SignedBytes()
    public init(jws: String, payload: TransactionPayload) { self.jws = jws; self.payload = payload }
}

/// A signed renewal info: the JWS exactly as received, and its decoded payload.
public struct SignedRenewalInfo: Sendable, Hashable {
    public var jws: String
    public var payload: RenewalInfoPayload
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes = SignedBytes()
    public init(jws: String, payload: RenewalInfoPayload) { self.jws = jws; self.payload = payload }
}

/// A signed AppTransaction: the JWS exactly as received, and its decoded payload.
public struct SignedAppTransaction: Sendable, Hashable {
    public var jws: String
    public var payload: AppTransactionPayload
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes = SignedBytes()
    public init(jws: String, payload: AppTransactionPayload) { self.jws = jws; self.payload = payload }
}

/// A signed notification with its nested signed objects, each verified on its own.
public struct SignedNotification: Sendable, Hashable {
    public var jws: String
    public var payload: NotificationPayload
    public var transaction: SignedTransaction?
    public var renewalInfo: SignedRenewalInfo?
    public var appTransaction: SignedAppTransaction?
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes = SignedBytes()
    public init(
        jws: String, payload: NotificationPayload, transaction: SignedTransaction? = nil,
        renewalInfo: SignedRenewalInfo? = nil, appTransaction: SignedAppTransaction? = nil
    ) {
        self.jws = jws
        self.payload = payload
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }
}

/// One verified input, of one of the four kinds the engine stores.
///
/// Only the verifier makes these from bytes; the core trusts that what it is
/// handed was verified.
public enum VerifiedInput: Sendable, Hashable {
    case notification(SignedNotification)
    case transaction(SignedTransaction)
    case renewalInfo(SignedRenewalInfo)
    case appTransaction(SignedAppTransaction)

    /// The specification's name for the kind: `notification`, `transaction`, `renewalInfo`, `appTransaction`.
    public var kind: SignedKind {
        switch self {
        case .notification: return .notification
        case .transaction: return .transaction
        case .renewalInfo: return .renewalInfo
        case .appTransaction: return .appTransaction
        }
    }

    /// The environment the input was signed for (a notification's from its
    /// `data`, `summary` or `appData`; an AppTransaction's `receiptType`), when
    /// it names one the engine knows.
    public var environment: AppStoreEnvironment? {
        switch self {
        case .notification(let n):
            return (n.payload.environment ?? n.transaction?.payload.environment).flatMap(AppStoreEnvironment.init(rawValue:))
        case .transaction(let t): return AppStoreEnvironment(rawValue: t.payload.environment)
        case .renewalInfo(let r): return AppStoreEnvironment(rawValue: r.payload.environment)
        case .appTransaction(let a): return AppStoreEnvironment(rawValue: a.payload.receiptType)
        }
    }

    /// What the verifier kept of the outermost JWS.
    private var outerSignedBytes: SignedBytes {
        switch self {
        case .notification(let n): return n.signedBytes
        case .transaction(let t): return t.signedBytes
        case .renewalInfo(let r): return r.signedBytes
        case .appTransaction(let a): return a.signedBytes
        }
    }

    /// The outermost payload's bytes as signed, when the verifier kept them.
    package var signedBytes: [UInt8]? { outerSignedBytes.bytes }

    /// The SHA-256 of the outermost JWS as received, when the verifier computed it.
    package var jwsDigest: [UInt8]? { outerSignedBytes.jwsDigest }

    /// The outermost JWS, as received.
    public var jws: String {
        switch self {
        case .notification(let n): return n.jws
        case .transaction(let t): return t.jws
        case .renewalInfo(let r): return r.jws
        case .appTransaction(let a): return a.jws
        }
    }
}
