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

/// A signed transaction, renewal info or AppTransaction: the JWS exactly as received, and
/// its decoded payload.
///
/// A value whose parts live in one immutable box that its copies share (as a
/// ``SignedNotification``'s do): a copy of a verified input is one reference count, not
/// one for each of its strings and those of its nested payloads. Setting a part makes a
/// new box.
public struct SignedJWS<Payload: Sendable & Hashable>: Sendable, Hashable {
    @usableFromInline struct Parts: Sendable {
        @usableFromInline var jws: String
        @usableFromInline var payload: Payload
        var signedBytes: SignedBytes
    }

    @usableFromInline var box: SharedParts<Parts>

    public var jws: String {
        @inlinable _read { yield box.parts.jws }
        set { box = box.with { $0.jws = newValue } }
    }
    public var payload: Payload {
        @inlinable _read { yield box.parts.payload }
        set { box = box.with { $0.payload = newValue } }
    }
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes: SignedBytes {
        get { box.parts.signedBytes }
        set { box = box.with { $0.signedBytes = newValue } }
    }

    public init(jws: String, payload: Payload) { self.init(jws: jws, payload: payload, signedBytes: SignedBytes()) }

    /// The value as the verifier makes it, with the payload's bytes as signed.
    package init(jws: String, payload: Payload, signedBytes: SignedBytes) {
        box = SharedParts(Parts(jws: jws, payload: payload, signedBytes: signedBytes))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.box === rhs.box || (lhs.jws == rhs.jws && lhs.payload == rhs.payload) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(jws)
        hasher.combine(payload)
    }
}

/// A signed transaction: the JWS exactly as received, and its decoded payload.
public typealias SignedTransaction = SignedJWS<TransactionPayload>
/// A signed renewal info: the JWS exactly as received, and its decoded payload.
public typealias SignedRenewalInfo = SignedJWS<RenewalInfoPayload>
/// A signed AppTransaction: the JWS exactly as received, and its decoded payload.
public typealias SignedAppTransaction = SignedJWS<AppTransactionPayload>

/// A signed notification with its nested signed objects, each verified on its own
/// (boxed as ``SignedJWS`` is).
public struct SignedNotification: Sendable, Hashable {
    @usableFromInline struct Parts: Sendable {
        @usableFromInline var jws: String
        @usableFromInline var payload: NotificationPayload
        @usableFromInline var transaction: SignedTransaction?
        @usableFromInline var renewalInfo: SignedRenewalInfo?
        @usableFromInline var appTransaction: SignedAppTransaction?
        var signedBytes: SignedBytes
    }

    @usableFromInline var box: SharedParts<Parts>

    public var jws: String {
        @inlinable _read { yield box.parts.jws }
        set { box = box.with { $0.jws = newValue } }
    }
    public var payload: NotificationPayload {
        @inlinable _read { yield box.parts.payload }
        set { box = box.with { $0.payload = newValue } }
    }
    public var transaction: SignedTransaction? {
        @inlinable _read { yield box.parts.transaction }
        set { box = box.with { $0.transaction = newValue } }
    }
    public var renewalInfo: SignedRenewalInfo? {
        @inlinable _read { yield box.parts.renewalInfo }
        set { box = box.with { $0.renewalInfo = newValue } }
    }
    public var appTransaction: SignedAppTransaction? {
        @inlinable _read { yield box.parts.appTransaction }
        set { box = box.with { $0.appTransaction = newValue } }
    }
    /// The payload's bytes as signed, when the verifier kept them.
    package var signedBytes: SignedBytes {
        get { box.parts.signedBytes }
        set { box = box.with { $0.signedBytes = newValue } }
    }

    public init(
        jws: String, payload: NotificationPayload, transaction: SignedTransaction? = nil,
        renewalInfo: SignedRenewalInfo? = nil, appTransaction: SignedAppTransaction? = nil
    ) {
        self.init(
            jws: jws, payload: payload, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction,
            signedBytes: SignedBytes())
    }

    /// The value as the verifier makes it, with the payload's bytes as signed.
    package init(
        jws: String, payload: NotificationPayload, transaction: SignedTransaction?, renewalInfo: SignedRenewalInfo?,
        appTransaction: SignedAppTransaction?, signedBytes: SignedBytes
    ) {
        box = SharedParts(
            Parts(
                jws: jws, payload: payload, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction,
                signedBytes: signedBytes))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.box === rhs.box
            || (lhs.jws == rhs.jws && lhs.payload == rhs.payload && lhs.transaction == rhs.transaction
                && lhs.renewalInfo == rhs.renewalInfo && lhs.appTransaction == rhs.appTransaction)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(jws)
        hasher.combine(payload)
        hasher.combine(transaction)
        hasher.combine(renewalInfo)
        hasher.combine(appTransaction)
    }
}

/// The parts of a signed value, which its copies share; never changed once made.
@usableFromInline final class SharedParts<Parts: Sendable>: Sendable {
    @usableFromInline let parts: Parts

    init(_ parts: Parts) { self.parts = parts }

    /// A new box with the parts `change` made of these.
    func with(_ change: (inout Parts) -> Void) -> SharedParts {
        var parts = self.parts
        change(&parts)
        return SharedParts(parts)
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
    /// A legacy app receipt's entries under one original transaction id.
    case receipt(ReceiptPart)

    /// The specification's name for the kind: `notification`, `transaction`, `renewalInfo`, `appTransaction`, `receipt`.
    public var kind: SignedKind {
        switch self {
        case .notification: return .notification
        case .transaction: return .transaction
        case .renewalInfo: return .renewalInfo
        case .appTransaction: return .appTransaction
        case .receipt: return .receipt
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
        case .receipt(let r): return r.receipt.payload.environment
        }
    }

    /// What the verifier kept of the outermost JWS.
    private var outerSignedBytes: SignedBytes {
        switch self {
        case .notification(let n): return n.signedBytes
        case .transaction(let t): return t.signedBytes
        case .renewalInfo(let r): return r.signedBytes
        case .appTransaction(let a): return a.signedBytes
        case .receipt: return SignedBytes()
        }
    }

    /// The outermost payload's bytes as signed, when the verifier kept them.
    package var signedBytes: [UInt8]? { outerSignedBytes.bytes }

    /// The SHA-256 of the outermost JWS as received, when the verifier computed it.
    package var jwsDigest: [UInt8]? { outerSignedBytes.jwsDigest }

    /// The outermost JWS, as received; for a receipt, its bytes in standard base64.
    public var jws: String {
        switch self {
        case .notification(let n): return n.jws
        case .transaction(let t): return t.jws
        case .renewalInfo(let r): return r.jws
        case .appTransaction(let a): return a.jws
        case .receipt(let r): return r.receipt.base64
        }
    }
}

/// A verified legacy app receipt (specification section 16): its bytes, their SHA-256,
/// and its decoded payload.
public struct SignedReceipt: Sendable, Hashable {
    /// The receipt's DER bytes in standard padded base64: what the log keeps and `audit`
    /// verifies again.
    public var base64: String
    /// The SHA-256 of the DER bytes, lowercase hex: the receipt's identity.
    public var sha256: String
    public var payload: ReceiptPayload

    public init(base64: String, sha256: String, payload: ReceiptPayload) {
        self.base64 = base64
        self.sha256 = sha256
        self.payload = payload
    }

    /// The receipt's original transaction ids, in ascending order, each once.
    public var originalTransactionIds: [String] {
        var seen = Set<String>()
        var ids: [String] = []
        for entry in payload.inApp where seen.insert(entry.originalTransactionId).inserted { ids.append(entry.originalTransactionId) }
        return ids.sorted(by: transactionIdPrecedes)
    }

    /// The receipt cut in one part per original transaction id (each the facts of one
    /// customer `otid:<id>`); one part with no entries when the receipt has none. A
    /// transaction id listed twice in the receipt counts once.
    public var parts: [ReceiptPart] {
        let ids = originalTransactionIds
        if ids.isEmpty { return [ReceiptPart(receipt: self, originalTransactionId: nil, entries: [])] }
        var byOriginal: [String: [ReceiptInAppEntry]] = [:]
        var seen = Set<String>()
        for entry in payload.inApp where seen.insert(entry.transactionId).inserted {
            byOriginal[entry.originalTransactionId, default: []].append(entry)
        }
        return ids.map { ReceiptPart(receipt: self, originalTransactionId: $0, entries: byOriginal[$0] ?? []) }
    }
}

/// The entries of one receipt under one original transaction id: what one `receipt`
/// event of the log holds.
public struct ReceiptPart: Sendable, Hashable {
    public var receipt: SignedReceipt
    /// `nil` for a receipt without in-app entries.
    public var originalTransactionId: String?
    public var entries: [ReceiptInAppEntry]

    public init(receipt: SignedReceipt, originalTransactionId: String?, entries: [ReceiptInAppEntry]) {
        self.receipt = receipt
        self.originalTransactionId = originalTransactionId
        self.entries = entries
    }
}
