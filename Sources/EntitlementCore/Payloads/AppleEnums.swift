/// The App Store environment a payload was signed for.
public enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit testing in Xcode: not signed by Apple.
    case xcode = "Xcode"
    /// Local StoreKit testing: not signed by Apple.
    case localTesting = "LocalTesting"

    /// Whether payloads in this environment carry no Apple signature to verify.
    public var isLocal: Bool {
        switch self {
        case .production, .sandbox: return false
        case .xcode, .localTesting: return true
        }
    }
}

/// A transaction's product type (`type`).
public enum ProductType: Sendable, Hashable {
    case autoRenewable
    case nonConsumable
    case consumable
    case nonRenewing
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Consumable": self = .nonConsumable
        case "Consumable": self = .consumable
        case "Non-Renewing Subscription": self = .nonRenewing
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .autoRenewable: return "Auto-Renewable Subscription"
        case .nonConsumable: return "Non-Consumable"
        case .consumable: return "Consumable"
        case .nonRenewing: return "Non-Renewing Subscription"
        case .unknown(let raw): return raw
        }
    }
}

/// How a transaction was revoked (`revocationType`).
public enum RevocationType: Sendable, Hashable {
    case refundFull
    case refundProrated
    case familyRevoke
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "REFUND_FULL": self = .refundFull
        case "REFUND_PRORATED": self = .refundProrated
        case "FAMILY_REVOKE": self = .familyRevoke
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .refundFull: return "REFUND_FULL"
        case .refundProrated: return "REFUND_PRORATED"
        case .familyRevoke: return "FAMILY_REVOKE"
        case .unknown(let raw): return raw
        }
    }
}

/// Whether the customer bought the product or has it through Family Sharing (`inAppOwnershipType`).
public enum OwnershipType: Sendable, Hashable {
    case purchased
    case familyShared
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "PURCHASED": self = .purchased
        case "FAMILY_SHARED": self = .familyShared
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .purchased: return "PURCHASED"
        case .familyShared: return "FAMILY_SHARED"
        case .unknown(let raw): return raw
        }
    }
}
