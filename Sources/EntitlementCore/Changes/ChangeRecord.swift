/// Why a change to a customer's active entitlements was recorded (specification section 8).
public enum ChangeCause: String, Sendable, Hashable, CaseIterable {
    /// A batch of ingested events (or a replay under the same rules).
    case event
    /// A replay under rules whose content changed.
    case rules
    /// Two customers merged (an `otid:` customer linked to its appTransactionId).
    case merge
    /// Time passed an expiry.
    case time
}

/// One line of the `changes` feed: an entitlement of one customer became
/// active, inactive, or got another `expiresDate`.
public struct ChangeRecord: Sendable, Hashable {
    /// Strictly increasing, in the order the changes were recorded.
    public var cursor: Int64
    /// The customer.
    public var appTransactionId: CustomerKey
    /// The entitlement, as the rules name it.
    public var entitlement: String
    public var active: Bool
    /// While active, the end of access (`nil` without an end); `nil` when inactive.
    public var expiresDate: Int64?
    /// When the change took effect in the customer's data (the expiry, the
    /// purchase, the revocation); the recording time where no date applies.
    public var effectiveAt: Int64
    /// When the engine recorded it.
    public var recordedAt: Int64
    public var cause: ChangeCause

    /// A record with exactly these fields.
    public init(
        cursor: Int64, appTransactionId: CustomerKey, entitlement: String, active: Bool, expiresDate: Int64?,
        effectiveAt: Int64, recordedAt: Int64, cause: ChangeCause
    ) {
        self.cursor = cursor
        self.appTransactionId = appTransactionId
        self.entitlement = entitlement
        self.active = active
        self.expiresDate = expiresDate
        self.effectiveAt = effectiveAt
        self.recordedAt = recordedAt
        self.cause = cause
    }

    /// The line `changes` prints, keys in the specification's order.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("cursor", .int(cursor)),
                ("appTransactionId", .string(appTransactionId)),
                ("entitlement", .string(entitlement)),
                ("active", .bool(active)),
                ("expiresDate", .nullable(expiresDate)),
                ("effectiveAt", .int(effectiveAt)),
                ("recordedAt", .int(recordedAt)),
                ("cause", .string(cause.rawValue)),
            ]))
    }
}

/// Encodes the keys `changes` prints (see ``json()``).
extension ChangeRecord: JSONRepresentable {}
