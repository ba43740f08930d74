/// What a customer used, in the operator's word (specification section 11): units of a
/// consumable currency spent at a moment, or the consumed share of one purchase.
///
/// A usage record is not signed by Apple: the operator (the app's server) says so.
/// It is logged like any event (hash-chained, never changed) with its own kind,
/// `usage`, and its raw form is ``canonicalJSON`` with `"source": "operator"`.
///
/// The customer is named the way signed data names it: by `appTransactionId`, or,
/// for a customer known only by an `originalTransactionId`, by that (so a record
/// made for `otid:<X>` follows X wherever X's objects go).
public struct UsageFacts: Sendable, Hashable {
    /// The operator's id of the record (`--id`): the idempotency key.
    public var usageId: String
    /// The customer's `appTransactionId`, when it has one.
    public var appTransactionId: String?
    /// The customer's `originalTransactionId`, when it has no `appTransactionId`.
    public var originalTransactionId: String?
    /// When the usage happened, in milliseconds since 1970 (evaluation at an
    /// earlier moment does not count it).
    public var at: Int64
    /// What was used.
    public var amount: UsageAmount

    public init(usageId: String, appTransactionId: String?, originalTransactionId: String? = nil, at: Int64, amount: UsageAmount) {
        self.usageId = usageId
        self.appTransactionId = appTransactionId
        self.originalTransactionId = originalTransactionId
        self.at = at
        self.amount = amount
    }

    /// The record for the customer keyed `key` (`appTransactionId`, or `otid:<originalTransactionId>`).
    public init(usageId: String, customer key: CustomerKey, at: Int64, amount: UsageAmount) {
        if key.hasPrefix("otid:") {
            self.init(usageId: usageId, appTransactionId: nil, originalTransactionId: String(key.dropFirst(5)), at: at, amount: amount)
        } else {
            self.init(usageId: usageId, appTransactionId: key, at: at, amount: amount)
        }
    }

    /// `appTransactionId`, or `otid:<originalTransactionId>`.
    public var customerKey: CustomerKey {
        appTransactionId ?? "otid:" + (originalTransactionId ?? "")
    }

    /// The raw form logged for the record (and hash-chained): members in a fixed
    /// order, so equal records have equal raws.
    public var canonicalJSON: JSONValue {
        var object = JSONObject()
        object["source"] = "operator"
        object["usageId"] = .string(usageId)
        if let appTransactionId { object["appTransactionId"] = .string(appTransactionId) }
        if let originalTransactionId { object["originalTransactionId"] = .string(originalTransactionId) }
        object["at"] = .int(at)
        switch amount {
        case .spend(let currency, let units):
            object["currency"] = .string(currency)
            object["units"] = .int(units)
        case .consumed(let transactionId, let share):
            object["transactionId"] = .string(transactionId)
            object["consumed"] = .int(share)
        }
        return .object(object)
    }

    /// The record in `json` (its ``canonicalJSON``), or `nil` when `json` is not one.
    public init?(json: JSONValue) {
        guard case .object(let object) = json, object["source"] == "operator",
            case .string(let usageId)? = object["usageId"], case .int(let at)? = object["at"]
        else { return nil }
        func string(_ key: String) -> String?? {
            switch object[key] {
            case nil: return .some(nil)
            case .string(let text)?: return .some(text)
            default: return nil
            }
        }
        guard let app = string("appTransactionId"), let otid = string("originalTransactionId"), (app == nil) != (otid == nil)
        else { return nil }
        let amount: UsageAmount
        if case .string(let currency)? = object["currency"], case .int(let units)? = object["units"] {
            guard object["transactionId"] == nil, object["consumed"] == nil else { return nil }
            amount = .spend(currency: currency, units: units)
        } else if case .string(let transactionId)? = object["transactionId"], case .int(let share)? = object["consumed"] {
            guard object["currency"] == nil, object["units"] == nil else { return nil }
            amount = .consumed(transactionId: transactionId, share: share)
        } else {
            return nil
        }
        self.init(usageId: usageId, appTransactionId: app, originalTransactionId: otid, at: at, amount: amount)
        guard JSONWriter.string(canonicalJSON) == JSONWriter.string(json) else { return nil }
    }

    /// A total order among records with the same ``usageId`` (the store refuses a
    /// second one with other content, but state must not depend on arrival even
    /// then): the later `at` wins, then the greater canonical JSON.
    func precedes(_ other: UsageFacts) -> Bool {
        if at != other.at { return at < other.at }
        return JSONWriter.string(canonicalJSON).utf8Precedes(JSONWriter.string(other.canonicalJSON))
    }
}

/// What a usage record says was used.
public enum UsageAmount: Sendable, Hashable {
    /// `units` (> 0) of a consumable `currency` spent.
    case spend(currency: String, units: Int64)
    /// `share` (0...100000, thousandths of a percent) of the purchase `transactionId` consumed.
    case consumed(transactionId: String, share: Int64)
}
