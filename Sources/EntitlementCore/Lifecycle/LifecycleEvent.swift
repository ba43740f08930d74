/// The kinds of lifecycle event (specification section 12): what happened to a
/// customer, as opposed to what they gained or lost (the change feed).
public enum LifecycleEventType: String, Sendable, Hashable, CaseIterable {
    case subscriptionStarted = "SUBSCRIPTION_STARTED"
    case renewal = "RENEWAL"
    case productChange = "PRODUCT_CHANGE"
    case autoRenewDisabled = "AUTO_RENEW_DISABLED"
    case autoRenewEnabled = "AUTO_RENEW_ENABLED"
    case billingIssue = "BILLING_ISSUE"
    case expiration = "EXPIRATION"
    case purchase = "PURCHASE"
    case refund = "REFUND"
    case familyRevoke = "FAMILY_REVOKE"
    case refundReversed = "REFUND_REVERSED"
    case consumptionRequest = "CONSUMPTION_REQUEST"
    case consentRescinded = "CONSENT_RESCINDED"
    case customerMerged = "CUSTOMER_MERGED"
    case grantStarted = "GRANT_STARTED"
    case grantEnded = "GRANT_ENDED"
    case grantRevoked = "GRANT_REVOKED"
    case transfer = "TRANSFER"
}

/// One lifecycle event of a customer's data: its identity, what it is about,
/// and when it took effect. The same data always gives the same events.
public struct LifecycleEvent: Sendable, Hashable {
    /// The event's identity (`<TYPE>:<...>`, specification section 12): recorded once, ever.
    public var id: String
    public var type: LifecycleEventType
    /// The customer (`appTransactionId`, or `otid:<originalTransactionId>`).
    public var customerKey: CustomerKey
    public var originalTransactionId: String?
    public var transactionId: String?
    public var productId: String?
    /// The App Store environment of the data (`Production`, `Sandbox`, ...).
    public var environment: String?
    /// The transaction's `price`, in milliunits of ``currency``.
    public var price: Int64?
    public var currency: String?
    /// The type's own fields, in the specification's order.
    public var extra: JSONObject
    /// When it took effect in the customer's data, in ms since 1970.
    public var effectiveAt: Int64
    /// The entitlements an operator's grant gives (a grant's events name no product).
    public var grantedEntitlements: [String]? = nil
    /// The SKUs of the Advanced Commerce items of the transaction the event is about
    /// (none for other transactions): the rules' `skus` grant theirs beside the product's.
    public var itemSKUs: [String] = []

    public init(
        id: String, type: LifecycleEventType, customerKey: CustomerKey, originalTransactionId: String? = nil,
        transactionId: String? = nil, productId: String? = nil, environment: String? = nil, price: Int64? = nil,
        currency: String? = nil, extra: JSONObject = JSONObject(), effectiveAt: Int64
    ) {
        self.id = id
        self.type = type
        self.customerKey = customerKey
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.productId = productId
        self.environment = environment
        self.price = price
        self.currency = currency
        self.extra = extra
        self.effectiveAt = effectiveAt
    }

    /// The entitlements the rules give the event's product (none without a product), then
    /// those its transaction's Advanced Commerce items' SKUs give (`rules.skus`) and the
    /// product's do not; for the refund of one item, those its `sku` gives alone: what that
    /// refund took away.
    public func entitlements(under rules: Rules) -> [String] {
        if let grantedEntitlements { return grantedEntitlements }
        if case .string(let sku)? = extra["sku"] { return rules.skus[sku]?.entitlements ?? [] }
        var names = productId.flatMap { rules.products[$0]?.entitlements } ?? []
        for sku in itemSKUs {
            for name in rules.skus[sku]?.entitlements ?? [] where !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// The feed's line without its `cursor`, keys in the specification's order.
    /// - Parameters:
    ///   - entitlements: the product's entitlements under the rules at recording.
    ///   - recordedAt: when the engine recorded it.
    public func line(entitlements: [String], recordedAt: Int64) -> JSONObject {
        var members: [(key: String, value: JSONValue)] = [
            ("id", .string(id)),
            ("type", .string(type.rawValue)),
            ("appTransactionId", .string(customerKey)),
            ("originalTransactionId", originalTransactionId.map(JSONValue.string) ?? .null),
            ("transactionId", transactionId.map(JSONValue.string) ?? .null),
            ("productId", productId.map(JSONValue.string) ?? .null),
            ("entitlements", .array(entitlements.map(JSONValue.string))),
            ("environment", environment.map(JSONValue.string) ?? .null),
            ("price", price.map(JSONValue.int) ?? .null),
            ("currency", currency.map(JSONValue.string) ?? .null),
        ]
        members.append(contentsOf: extra.members)
        members.append(("effectiveAt", .int(effectiveAt)))
        members.append(("recordedAt", .int(recordedAt)))
        return JSONObject(members)
    }
}

extension LifecycleEvent {
    /// What the store keeps of the line besides its columns (id, type, customer,
    /// effectiveAt, recordedAt): the values alone, in the line's order,
    /// `[originalTransactionId, transactionId, productId, entitlements, environment,
    /// price, currency, {the type's fields}]`.
    public func storedValues(entitlements: [String]) -> JSONValue {
        Self.storedValues(
            originalTransactionId: originalTransactionId, transactionId: transactionId, productId: productId,
            entitlements: entitlements, environment: environment, price: price, currency: currency, extra: extra)
    }

    /// The stored values' array (``storedValues(entitlements:)``) from its parts.
    public static func storedValues(
        originalTransactionId: String?, transactionId: String?, productId: String?, entitlements: [String],
        environment: String?, price: Int64?, currency: String?, extra: JSONObject
    ) -> JSONValue {
        .array([
            originalTransactionId.map(JSONValue.string) ?? .null,
            transactionId.map(JSONValue.string) ?? .null,
            productId.map(JSONValue.string) ?? .null,
            .array(entitlements.map(JSONValue.string)),
            environment.map(JSONValue.string) ?? .null,
            price.map(JSONValue.int) ?? .null,
            currency.map(JSONValue.string) ?? .null,
            .object(extra),
        ])
    }
}

/// One line of the `lifecycle` feed, as recorded.
public struct LifecycleRecord: Sendable, Hashable {
    /// Strictly increasing, in the order the events were recorded.
    public var cursor: Int64
    public var id: String
    public var type: LifecycleEventType
    /// The customer the event was recorded under.
    public var appTransactionId: CustomerKey
    public var effectiveAt: Int64
    public var recordedAt: Int64
    /// Every field of the line but `cursor` (``LifecycleEvent/line(entitlements:recordedAt:)``).
    public var fields: JSONObject

    public init(
        cursor: Int64, id: String, type: LifecycleEventType, appTransactionId: CustomerKey, effectiveAt: Int64,
        recordedAt: Int64, fields: JSONObject
    ) {
        self.cursor = cursor
        self.id = id
        self.type = type
        self.appTransactionId = appTransactionId
        self.effectiveAt = effectiveAt
        self.recordedAt = recordedAt
        self.fields = fields
    }

    /// A record from the store's columns and ``LifecycleEvent/storedValues(entitlements:)``;
    /// `nil` when the values are not of that form.
    public init?(
        cursor: Int64, id: String, type: LifecycleEventType, appTransactionId: CustomerKey, effectiveAt: Int64,
        recordedAt: Int64, storedValues: JSONValue
    ) {
        guard case .array(let values) = storedValues, values.count == 8, case .object(let extra) = values[7] else { return nil }
        var members: [(key: String, value: JSONValue)] = [
            ("id", .string(id)), ("type", .string(type.rawValue)), ("appTransactionId", .string(appTransactionId)),
        ]
        for (index, key) in ["originalTransactionId", "transactionId", "productId", "entitlements", "environment", "price", "currency"]
            .enumerated()
        {
            members.append((key, values[index]))
        }
        members.append(contentsOf: extra.members)
        members.append(("effectiveAt", .int(effectiveAt)))
        members.append(("recordedAt", .int(recordedAt)))
        self.init(
            cursor: cursor, id: id, type: type, appTransactionId: appTransactionId, effectiveAt: effectiveAt, recordedAt: recordedAt,
            fields: JSONObject(members))
    }

    /// The line `lifecycle` prints: `cursor`, then the recorded fields.
    public func json() -> JSONValue {
        .object(JSONObject([("cursor", .int(cursor))] + fields.members.filter { $0.key != "cursor" }))
    }
}

/// Encodes the keys `lifecycle` prints (see ``json()``).
extension LifecycleRecord: JSONRepresentable {}
