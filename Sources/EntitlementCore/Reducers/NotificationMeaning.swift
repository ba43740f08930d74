/// What a notification tells, for people reading a customer's history.
///
/// State never depends on a notification's type: it is derived from the
/// signed objects the notification carries, so order never matters. Here each
/// type and subtype Apple documents is named in plain words, with a `switch`
/// that has no `default`, so a new case Apple adds is a compile error here
/// until it is described.
public enum NotificationMeaning {
    /// A one-line account of a notification of `type` and `subtype`.
    public static func headline(_ type: NotificationType, _ subtype: NotificationSubtype?) -> String {
        switch (type, subtype) {
        case (.subscribed, .initialBuy?): return "Subscribed for the first time"
        case (.subscribed, .resubscribe?): return "Resubscribed"
        case (.subscribed, _): return "Subscribed"
        case (.didRenew, .billingRecovery?): return "Renewed after a billing failure"
        case (.didRenew, _): return "Renewed"
        case (.didFailToRenew, .gracePeriod?): return "Renewal failed; in billing grace period"
        case (.didFailToRenew, _): return "Renewal failed; in billing retry"
        case (.gracePeriodExpired, _): return "Billing grace period ended"
        case (.expired, .voluntary?): return "Expired: auto-renew was turned off"
        case (.expired, .billingRetry?): return "Expired: billing retry ended without recovery"
        case (.expired, .priceIncrease?): return "Expired: price increase not accepted"
        case (.expired, .productNotForSale?): return "Expired: product no longer for sale"
        case (.expired, _): return "Expired"
        case (.didChangeRenewalPref, .upgrade?): return "Upgraded (takes effect at once)"
        case (.didChangeRenewalPref, .downgrade?): return "Downgrade scheduled for the next renewal"
        case (.didChangeRenewalPref, _): return "Renewal preference changed (pending change cancelled)"
        case (.didChangeRenewalStatus, .autoRenewEnabled?): return "Auto-renew turned on"
        case (.didChangeRenewalStatus, .autoRenewDisabled?): return "Auto-renew turned off"
        case (.didChangeRenewalStatus, _): return "Auto-renew status changed"
        case (.offerRedeemed, .initialBuy?): return "Offer redeemed for a first subscription"
        case (.offerRedeemed, .resubscribe?): return "Offer redeemed to resubscribe"
        case (.offerRedeemed, .upgrade?): return "Offer redeemed for an upgrade"
        case (.offerRedeemed, .downgrade?): return "Offer redeemed for a downgrade"
        case (.offerRedeemed, _): return "Offer redeemed"
        case (.priceIncrease, .pending?): return "Price increase awaiting consent"
        case (.priceIncrease, .accepted?): return "Price increase accepted"
        case (.priceIncrease, _): return "Price increase"
        case (.refund, _): return "Refunded"
        case (.refundDeclined, _): return "Refund request declined"
        case (.refundReversed, _): return "Refund reversed"
        case (.revoke, _): return "Family Sharing access revoked"
        case (.renewalExtended, _): return "Renewal date extended"
        case (.renewalExtension, .summary?): return "Renewal-date extension for all customers completed"
        case (.renewalExtension, .failure?): return "Renewal-date extension failed for one subscription"
        case (.renewalExtension, _): return "Renewal-date extension"
        case (.consumptionRequest, _): return "Refund requested; consumption information asked for"
        case (.oneTimeCharge, _): return "One-time purchase"
        case (.test, _): return "Test notification"
        case (.metadataUpdate, _): return "Subscription metadata updated"
        case (.migration, _): return "Subscription migrated"
        case (.priceChange, _): return "Price changed"
        case (.rescindConsent, _): return "Consent rescinded"
        case (.externalPurchaseToken, .unreported?): return "External purchase token not reported"
        case (.externalPurchaseToken, .activeTokenReminder?): return "External purchase token reminder"
        case (.externalPurchaseToken, .created?): return "External purchase token created"
        case (.externalPurchaseToken, _): return "External purchase token"
        case (.unknown("MIGRATE"), _): return "Subscription migrated"
        case (.unknown(let raw), _): return "Unrecognized notification " + raw
        }
    }

    /// Whether a notification of `type` carries (or may carry) signed data
    /// that changes a customer's state. Informational types (TEST,
    /// CONSUMPTION_REQUEST, REFUND_DECLINED, the extension SUMMARY, external
    /// purchase tokens) carry nothing new, yet their signed objects are applied
    /// like any other, which is harmless because versions only ever move forward.
    public static func changesState(_ type: NotificationType) -> Bool {
        switch type {
        case .subscribed, .didRenew, .didFailToRenew, .gracePeriodExpired, .expired, .didChangeRenewalPref,
            .didChangeRenewalStatus, .offerRedeemed, .priceIncrease, .refund, .refundReversed, .revoke,
            .renewalExtended, .oneTimeCharge, .metadataUpdate, .migration, .priceChange:
            return true
        case .refundDeclined, .renewalExtension, .consumptionRequest, .test, .rescindConsent, .externalPurchaseToken:
            return false
        case .unknown:
            // Whatever it is, its signed objects are applied: the state follows the signed data.
            return true
        }
    }
}

extension NotificationSummaryFacts {
    /// A one-line account of the notification (see ``NotificationMeaning``).
    public var headline: String { NotificationMeaning.headline(type, subtype) }
}

extension NotificationFacts {
    /// A one-line account of the notification (see ``NotificationMeaning``).
    public var headline: String { NotificationMeaning.headline(type, subtype) }
}
