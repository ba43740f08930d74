/// App Store Server Notifications V2 `notificationType`.
///
/// Every type Apple documents has a case; a type Apple adds later decodes as
/// ``unknown(_:)`` and is stored like any other, so ingest never breaks on it.
public enum NotificationType: Sendable, Hashable {
    case consumptionRequest, didChangeRenewalPref, didChangeRenewalStatus, didFailToRenew, didRenew
    case expired, externalPurchaseToken, gracePeriodExpired, metadataUpdate, migration, offerRedeemed
    case oneTimeCharge, priceChange, priceIncrease, refund, refundDeclined, refundReversed
    case renewalExtended, renewalExtension, rescindConsent, revoke, subscribed, test
    case unknown(String)

    public static let known: [NotificationType] = [
        .consumptionRequest, .didChangeRenewalPref, .didChangeRenewalStatus, .didFailToRenew, .didRenew,
        .expired, .externalPurchaseToken, .gracePeriodExpired, .metadataUpdate, .migration, .offerRedeemed,
        .oneTimeCharge, .priceChange, .priceIncrease, .refund, .refundDeclined, .refundReversed,
        .renewalExtended, .renewalExtension, .rescindConsent, .revoke, .subscribed, .test,
    ]

    public init(rawValue: String) {
        self = Self.known.first(where: { $0.rawValue == rawValue }) ?? .unknown(rawValue)
    }

    public var rawValue: String {
        switch self {
        case .consumptionRequest: return "CONSUMPTION_REQUEST"
        case .didChangeRenewalPref: return "DID_CHANGE_RENEWAL_PREF"
        case .didChangeRenewalStatus: return "DID_CHANGE_RENEWAL_STATUS"
        case .didFailToRenew: return "DID_FAIL_TO_RENEW"
        case .didRenew: return "DID_RENEW"
        case .expired: return "EXPIRED"
        case .externalPurchaseToken: return "EXTERNAL_PURCHASE_TOKEN"
        case .gracePeriodExpired: return "GRACE_PERIOD_EXPIRED"
        case .metadataUpdate: return "METADATA_UPDATE"
        case .migration: return "MIGRATION"
        case .offerRedeemed: return "OFFER_REDEEMED"
        case .oneTimeCharge: return "ONE_TIME_CHARGE"
        case .priceChange: return "PRICE_CHANGE"
        case .priceIncrease: return "PRICE_INCREASE"
        case .refund: return "REFUND"
        case .refundDeclined: return "REFUND_DECLINED"
        case .refundReversed: return "REFUND_REVERSED"
        case .renewalExtended: return "RENEWAL_EXTENDED"
        case .renewalExtension: return "RENEWAL_EXTENSION"
        case .rescindConsent: return "RESCIND_CONSENT"
        case .revoke: return "REVOKE"
        case .subscribed: return "SUBSCRIBED"
        case .test: return "TEST"
        case .unknown(let raw): return raw
        }
    }
}

/// App Store Server Notifications V2 `subtype`.
public enum NotificationSubtype: Sendable, Hashable {
    case accepted, activeTokenReminder, autoRenewDisabled, autoRenewEnabled, billingRecovery, billingRetry
    case created, downgrade, failure, gracePeriod, initialBuy, pending, priceIncrease, productNotForSale
    case resubscribe, summary, unreported, upgrade, voluntary
    case unknown(String)

    public static let known: [NotificationSubtype] = [
        .accepted, .activeTokenReminder, .autoRenewDisabled, .autoRenewEnabled, .billingRecovery, .billingRetry,
        .created, .downgrade, .failure, .gracePeriod, .initialBuy, .pending, .priceIncrease, .productNotForSale,
        .resubscribe, .summary, .unreported, .upgrade, .voluntary,
    ]

    public init(rawValue: String) {
        self = Self.known.first(where: { $0.rawValue == rawValue }) ?? .unknown(rawValue)
    }

    public var rawValue: String {
        switch self {
        case .accepted: return "ACCEPTED"
        case .activeTokenReminder: return "ACTIVE_TOKEN_REMINDER"
        case .autoRenewDisabled: return "AUTO_RENEW_DISABLED"
        case .autoRenewEnabled: return "AUTO_RENEW_ENABLED"
        case .billingRecovery: return "BILLING_RECOVERY"
        case .billingRetry: return "BILLING_RETRY"
        case .created: return "CREATED"
        case .downgrade: return "DOWNGRADE"
        case .failure: return "FAILURE"
        case .gracePeriod: return "GRACE_PERIOD"
        case .initialBuy: return "INITIAL_BUY"
        case .pending: return "PENDING"
        case .priceIncrease: return "PRICE_INCREASE"
        case .productNotForSale: return "PRODUCT_NOT_FOR_SALE"
        case .resubscribe: return "RESUBSCRIBE"
        case .summary: return "SUMMARY"
        case .unreported: return "UNREPORTED"
        case .upgrade: return "UPGRADE"
        case .voluntary: return "VOLUNTARY"
        case .unknown(let raw): return raw
        }
    }
}
