/// Stable one-byte codes for the engine's enumerations in stored bytes.
///
/// The numbers are part of the stored format: never renumber, only add.
/// Code 0 is a value Apple added after this build: its raw string follows.
extension ByteWriter {
    mutating func productType(_ value: ProductType) {
        switch value {
        case .unknown(let raw): byte(0); string(raw)
        case .autoRenewable: byte(1)
        case .nonConsumable: byte(2)
        case .consumable: byte(3)
        case .nonRenewing: byte(4)
        }
    }

    mutating func revocationType(_ value: RevocationType) {
        switch value {
        case .unknown(let raw): byte(0); string(raw)
        case .refundFull: byte(1)
        case .refundProrated: byte(2)
        case .familyRevoke: byte(3)
        }
    }

    mutating func ownership(_ value: OwnershipType) {
        switch value {
        case .unknown(let raw): byte(0); string(raw)
        case .purchased: byte(1)
        case .familyShared: byte(2)
        }
    }

    mutating func notificationType(_ value: NotificationType) {
        switch value {
        case .unknown(let raw): byte(0); string(raw)
        case .consumptionRequest: byte(1)
        case .didChangeRenewalPref: byte(2)
        case .didChangeRenewalStatus: byte(3)
        case .didFailToRenew: byte(4)
        case .didRenew: byte(5)
        case .expired: byte(6)
        case .externalPurchaseToken: byte(7)
        case .gracePeriodExpired: byte(8)
        case .metadataUpdate: byte(9)
        case .migration: byte(10)
        case .offerRedeemed: byte(11)
        case .oneTimeCharge: byte(12)
        case .priceChange: byte(13)
        case .priceIncrease: byte(14)
        case .refund: byte(15)
        case .refundDeclined: byte(16)
        case .refundReversed: byte(17)
        case .renewalExtended: byte(18)
        case .renewalExtension: byte(19)
        case .rescindConsent: byte(20)
        case .revoke: byte(21)
        case .subscribed: byte(22)
        case .test: byte(23)
        }
    }

    mutating func notificationSubtype(_ value: NotificationSubtype) {
        switch value {
        case .unknown(let raw): byte(0); string(raw)
        case .accepted: byte(1)
        case .activeTokenReminder: byte(2)
        case .autoRenewDisabled: byte(3)
        case .autoRenewEnabled: byte(4)
        case .billingRecovery: byte(5)
        case .billingRetry: byte(6)
        case .created: byte(7)
        case .downgrade: byte(8)
        case .failure: byte(9)
        case .gracePeriod: byte(10)
        case .initialBuy: byte(11)
        case .pending: byte(12)
        case .priceIncrease: byte(13)
        case .productNotForSale: byte(14)
        case .resubscribe: byte(15)
        case .summary: byte(16)
        case .unreported: byte(17)
        case .upgrade: byte(18)
        case .voluntary: byte(19)
        }
    }
}

extension ByteReader {
    private mutating func badTag(_ code: UInt8, _ what: String) -> CodecError {
        CodecError(code: .invalidTag, offset: offset - 1, message: "unknown \(what) code \(code)")
    }

    mutating func productType() throws(CodecError) -> ProductType {
        let code = try byte()
        switch code {
        case 0: return .unknown(try string())
        case 1: return .autoRenewable
        case 2: return .nonConsumable
        case 3: return .consumable
        case 4: return .nonRenewing
        default: throw badTag(code, "product type")
        }
    }

    mutating func revocationType() throws(CodecError) -> RevocationType {
        let code = try byte()
        switch code {
        case 0: return .unknown(try string())
        case 1: return .refundFull
        case 2: return .refundProrated
        case 3: return .familyRevoke
        default: throw badTag(code, "revocation type")
        }
    }

    mutating func ownership() throws(CodecError) -> OwnershipType {
        let code = try byte()
        switch code {
        case 0: return .unknown(try string())
        case 1: return .purchased
        case 2: return .familyShared
        default: throw badTag(code, "ownership type")
        }
    }

    mutating func notificationType() throws(CodecError) -> NotificationType {
        let code = try byte()
        switch code {
        case 0: return .unknown(try string())
        case 1: return .consumptionRequest
        case 2: return .didChangeRenewalPref
        case 3: return .didChangeRenewalStatus
        case 4: return .didFailToRenew
        case 5: return .didRenew
        case 6: return .expired
        case 7: return .externalPurchaseToken
        case 8: return .gracePeriodExpired
        case 9: return .metadataUpdate
        case 10: return .migration
        case 11: return .offerRedeemed
        case 12: return .oneTimeCharge
        case 13: return .priceChange
        case 14: return .priceIncrease
        case 15: return .refund
        case 16: return .refundDeclined
        case 17: return .refundReversed
        case 18: return .renewalExtended
        case 19: return .renewalExtension
        case 20: return .rescindConsent
        case 21: return .revoke
        case 22: return .subscribed
        case 23: return .test
        default: throw badTag(code, "notification type")
        }
    }

    mutating func notificationSubtype() throws(CodecError) -> NotificationSubtype {
        let code = try byte()
        switch code {
        case 0: return .unknown(try string())
        case 1: return .accepted
        case 2: return .activeTokenReminder
        case 3: return .autoRenewDisabled
        case 4: return .autoRenewEnabled
        case 5: return .billingRecovery
        case 6: return .billingRetry
        case 7: return .created
        case 8: return .downgrade
        case 9: return .failure
        case 10: return .gracePeriod
        case 11: return .initialBuy
        case 12: return .pending
        case 13: return .priceIncrease
        case 14: return .productNotForSale
        case 15: return .resubscribe
        case 16: return .summary
        case 17: return .unreported
        case 18: return .upgrade
        case 19: return .voluntary
        default: throw badTag(code, "notification subtype")
        }
    }
}
