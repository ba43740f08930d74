/// One line of a customer's history (specification section 7): what changed at a
/// moment, and the signed object that supplies the date.
public struct HistoryLine: Sendable, Hashable {
    /// What changed.
    public enum Change: Sendable, Hashable {
        /// An entitlement's answer at the moment (its `active`, `expiresDate` or `productId` changed).
        case entitlement(name: String, active: Bool, expiresDate: Int64?, productId: String?)
        /// A subscription's status; `previous` is `nil` when it did not exist a millisecond before.
        case subscription(originalTransactionId: String, status: SubscriptionStatus, previous: SubscriptionStatus?)
        /// A consumable balance; `previous` is `nil` when the currency had no balance a millisecond before.
        case balance(currency: String, value: Int64, previous: Int64?)
    }

    /// The moment, in milliseconds since 1970.
    public var at: Int64
    public var change: Change
    /// The signed object whose date this is (`nil` only if none is dated then).
    public var cause: HistoryCause?

    /// A line with exactly these fields.
    public init(at: Int64, change: Change, cause: HistoryCause?) {
        self.at = at
        self.change = change
        self.cause = cause
    }

    /// The line as `history` prints it, keys in the specification's order.
    public func json() -> JSONValue {
        var members: [(String, JSONValue)] = [("at", .int(at))]
        switch change {
        case .entitlement(let name, let active, let expiresDate, let productId):
            members += [
                ("entitlement", .string(name)), ("active", .bool(active)), ("expiresDate", .nullable(expiresDate)),
                ("productId", .nullable(productId)),
            ]
        case .subscription(let otid, let status, let previous):
            members += [
                ("subscription", .string(otid)), ("status", .string(status.rawValue)),
                ("previous", .nullable(previous?.rawValue)),
            ]
        case .balance(let currency, let value, let previous):
            members += [("balance", .string(currency)), ("value", .int(value)), ("previous", .nullable(previous))]
        }
        members.append(("cause", cause?.json() ?? .null))
        return .object(JSONObject(members))
    }
}

/// What supplies the date of a history line: a signed transaction's field, a
/// renewal info version, and the notification that brought it, where one did.
public struct HistoryCause: Sendable, Hashable {
    /// The kind of object.
    public enum Kind: String, Sendable, Hashable {
        case transaction
        /// An in-app entry of a legacy app receipt (id: its `transactionId`).
        case receipt
        case renewalInfo
        case usage
        /// A notification whose own date matters (RESCIND_CONSENT).
        case notification
        /// An operator's grant (field `from`, `until` or `revokedAt`).
        case grant
        /// An operator's credit.
        case credit
    }

    public var kind: Kind
    /// The `transactionId` (of a receipt's entry too); for a renewal info its `originalTransactionId`; for usage, a grant or a credit the
    /// record's id; for a notification its type.
    public var id: String
    /// The field whose date it is (`purchaseDate`, `expiresDate`, `revocationDate`,
    /// `windowStart` for a pass stacked after another, `gracePeriodExpiresDate`);
    /// `nil` for a renewal info's own `signedDate`.
    public var field: String?
    /// For a renewal info: the version's `signedDate`.
    public var signedDate: Int64?
    /// The `notificationType` of the notification that brought the object, if one did.
    public var notificationType: String?
    /// Its `subtype`.
    public var subtype: String?

    /// A cause with exactly these fields.
    public init(
        kind: Kind, id: String, field: String? = nil, signedDate: Int64? = nil, notificationType: String? = nil,
        subtype: String? = nil
    ) {
        self.kind = kind
        self.id = id
        self.field = field
        self.signedDate = signedDate
        self.notificationType = notificationType
        self.subtype = subtype
    }

    /// `{"kind", "id", "field" | "signedDate", ["notificationType", "subtype"]}`: absent keys are left out,
    /// except `subtype`, which is `null` beside a `notificationType` that has none.
    public func json() -> JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string(kind.rawValue)), ("id", .string(id))]
        if let field { members.append(("field", .string(field))) }
        if let signedDate { members.append(("signedDate", .int(signedDate))) }
        if let notificationType {
            members.append(("notificationType", .string(notificationType)))
            members.append(("subtype", .nullable(subtype)))
        }
        return .object(JSONObject(members))
    }

    /// A total order, for choosing between causes deterministically.
    func precedes(_ other: HistoryCause) -> Bool {
        if kind != other.kind { return kind.rawValue.utf8Precedes(other.kind.rawValue) }
        if id != other.id { return transactionIdPrecedes(id, other.id) }
        if field != other.field { return (field ?? "").utf8Precedes(other.field ?? "") }
        return (signedDate ?? Int64.min) < (other.signedDate ?? Int64.min)
    }
}

/// Encodes the keys `history` prints (see ``json()``).
extension HistoryLine: JSONRepresentable {}

/// Encodes the keys `history` prints (see ``json()``).
extension HistoryCause: JSONRepresentable {}
