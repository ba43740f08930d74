/// What an operator (support, a product team, the app's own server) did to a
/// customer or an app user (specification section 13): a grant, its revocation, a
/// credit, a link to an app user.
///
/// Not signed by Apple: logged like any event (hash-chained, never changed) with a
/// kind of the ``OperatorKind`` family, its raw form ``canonicalJSON`` with
/// `"source": "operator"`, and it records who did it (``operatorName``) and why
/// (``reason``).
///
/// Whom it is about: a customer, named the way signed data names it (its
/// `appTransactionId`, or the `originalTransactionId` of a customer that has
/// none, so the record follows that customer when it merges), or an app user
/// alone (``appUserId`` without a customer: a grant or credit to the team's
/// account, whatever App Store customers it has). A link names both.
public struct OperatorRecord: Sendable, Hashable {
    /// The operator's id (`--id`): with the kind, the idempotency key. A revocation
    /// carries the id of the grant it ends.
    public var id: String
    /// The customer's `appTransactionId`, when the record is about a customer that has one.
    public var appTransactionId: String?
    /// The customer's `originalTransactionId`, when it is about a customer without `appTransactionId`.
    public var originalTransactionId: String?
    /// The app user: the one a grant or credit is given to (no customer named), or
    /// the one a link links the customer to.
    public var appUserId: String?
    /// When the operator recorded it, in milliseconds since 1970: a credit counts
    /// from then, a link decides by it (the later link wins).
    public var recordedAt: Int64
    /// Who did it (`--operator`, or the admin token's label in `serve`).
    public var operatorName: String?
    /// Why (`--reason`).
    public var reason: String?
    /// What was done.
    public var action: OperatorAction

    public init(
        id: String, appTransactionId: String? = nil, originalTransactionId: String? = nil, appUserId: String? = nil,
        recordedAt: Int64, operatorName: String? = nil, reason: String? = nil, action: OperatorAction
    ) {
        self.id = id
        self.appTransactionId = appTransactionId
        self.originalTransactionId = originalTransactionId
        self.appUserId = appUserId
        self.recordedAt = recordedAt
        self.operatorName = operatorName
        self.reason = reason
        self.action = action
    }

    /// The record's kind.
    public var kind: OperatorKind {
        switch action {
        case .grant: return .grant
        case .grantRevoked: return .grantRevoked
        case .credit: return .credit
        case .link: return .link
        }
    }

    /// The idempotency key: `<kind>:<id>` (a grant and its revocation share the id).
    public var identity: String { kind.rawValue + ":" + id }

    /// The key the record is filed under: the customer's (`appTransactionId`, or
    /// `otid:<originalTransactionId>`), else the app user's own, `user:<appUserId>`.
    public var customerKey: CustomerKey {
        if let appTransactionId { return appTransactionId }
        if let originalTransactionId { return "otid:" + originalTransactionId }
        return Self.appUserKey(appUserId ?? "")
    }

    /// The key under which what is given to the app user `appUserId` itself is kept.
    public static func appUserKey(_ appUserId: String) -> CustomerKey { "user:" + appUserId }

    /// The app user a key made by ``appUserKey(_:)`` names, else `nil`.
    public static func appUser(ofKey key: CustomerKey) -> String? {
        key.hasPrefix("user:") ? String(key.dropFirst(5)) : nil
    }

    /// Names the customer `key` (`appTransactionId`, `otid:<X>`) or app user (`user:<U>`) as the record's target.
    public mutating func target(_ key: CustomerKey) {
        appTransactionId = nil
        originalTransactionId = nil
        if key.hasPrefix("otid:") {
            originalTransactionId = String(key.dropFirst(5))
        } else if let user = Self.appUser(ofKey: key) {
            appUserId = user
        } else {
            appTransactionId = key
        }
    }

    /// The raw form logged for the record (and hash-chained): members in a fixed
    /// order, so equal records have equal raws.
    public var canonicalJSON: JSONValue {
        var object = JSONObject()
        object["source"] = "operator"
        object["kind"] = .string(kind.rawValue)
        object["id"] = .string(id)
        if let appTransactionId { object["appTransactionId"] = .string(appTransactionId) }
        if let originalTransactionId { object["originalTransactionId"] = .string(originalTransactionId) }
        if let appUserId { object["appUserId"] = .string(appUserId) }
        object["recordedAt"] = .int(recordedAt)
        switch action {
        case .grant(let entitlement, let from, let until):
            object["entitlement"] = .string(entitlement)
            object["from"] = .int(from)
            object["until"] = .int(until)
        case .grantRevoked(let at):
            object["at"] = .int(at)
        case .credit(let currency, let units):
            object["currency"] = .string(currency)
            object["units"] = .int(units)
        case .link:
            break
        }
        if let operatorName { object["operator"] = .string(operatorName) }
        if let reason { object["reason"] = .string(reason) }
        return .object(object)
    }

    /// The record in `json` (its ``canonicalJSON``), or `nil` when `json` is not one.
    public init?(json: JSONValue) {
        guard case .object(let object) = json, object["source"] == "operator",
            case .string(let kindName)? = object["kind"], let kind = OperatorKind(rawValue: kindName),
            case .string(let id)? = object["id"], case .int(let recordedAt)? = object["recordedAt"]
        else { return nil }
        func string(_ key: String) -> String? {
            if case .string(let text)? = object[key] { return text }
            return nil
        }
        func int(_ key: String) -> Int64? {
            if case .int(let value)? = object[key] { return value }
            return nil
        }
        let action: OperatorAction
        switch kind {
        case .grant:
            guard let entitlement = string("entitlement"), let from = int("from"), let until = int("until") else { return nil }
            action = .grant(entitlement: entitlement, from: from, until: until)
        case .grantRevoked:
            guard let at = int("at") else { return nil }
            action = .grantRevoked(at: at)
        case .credit:
            guard let currency = string("currency"), let units = int("units") else { return nil }
            action = .credit(currency: currency, units: units)
        case .link:
            action = .link
        case .usage:
            return nil
        }
        self.init(
            id: id, appTransactionId: string("appTransactionId"), originalTransactionId: string("originalTransactionId"),
            appUserId: string("appUserId"), recordedAt: recordedAt, operatorName: string("operator"), reason: string("reason"),
            action: action)
        guard appTransactionId == nil || originalTransactionId == nil else { return nil }
        guard JSONWriter.string(canonicalJSON) == JSONWriter.string(json) else { return nil }
    }

    /// A total order among records with the same ``identity`` (the store refuses a
    /// second one with other content, but state must not depend on arrival even
    /// then): the later `recordedAt` wins, then the greater canonical JSON.
    func precedes(_ other: OperatorRecord) -> Bool {
        if recordedAt != other.recordedAt { return recordedAt < other.recordedAt }
        return JSONWriter.string(canonicalJSON).utf8Precedes(JSONWriter.string(other.canonicalJSON))
    }
}

/// What an operator did.
public enum OperatorAction: Sendable, Hashable {
    /// `entitlement` is active from `from` (inclusive) until `until` (exclusive).
    case grant(entitlement: String, from: Int64, until: Int64)
    /// The grant with the record's id ends at `at`.
    case grantRevoked(at: Int64)
    /// `units` (positive or negative) of `currency` added to a balance from the record's `recordedAt`.
    case credit(currency: String, units: Int64)
    /// The customer is linked to the record's ``OperatorRecord/appUserId``.
    case link
}
