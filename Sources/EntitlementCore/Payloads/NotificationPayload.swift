/// A decoded App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
///
/// The nested `signedTransactionInfo`, `signedRenewalInfo` and
/// `signedAppTransactionInfo` stay JWS strings here; the verifier verifies and
/// decodes them separately.
public struct NotificationPayload: Sendable, Hashable {
    public var json: JSONValue
    public var notificationType: NotificationType
    public var subtype: NotificationSubtype?
    public var notificationUUID: String
    public var version: String?
    public var signedDate: Int64
    public var data: NotificationData?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?

    public init(json: JSONValue) throws(PayloadDecodingError) {
        let r = try FieldReader(json)
        self.json = json
        notificationType = NotificationType(rawValue: try r.requiredString("notificationType"))
        subtype = try r.string("subtype").map(NotificationSubtype.init(rawValue:))
        notificationUUID = try r.requiredString("notificationUUID")
        version = try r.string("version")
        signedDate = try r.requiredDate("signedDate")
        data = try r.nested("data").map { reader throws(PayloadDecodingError) in try NotificationData(reader) }
        summary = try r.nested("summary").map { reader throws(PayloadDecodingError) in try NotificationSummary(reader) }
        externalPurchaseToken = try r.nested("externalPurchaseToken").map { reader throws(PayloadDecodingError) in
            try ExternalPurchaseToken(reader)
        }
        appData = try r.nested("appData").map { reader throws(PayloadDecodingError) in try AppData(reader) }
    }

    /// The bundle the notification is about, wherever the payload carries it.
    public var bundleId: String? { data?.bundleId ?? summary?.bundleId ?? appData?.bundleId ?? externalPurchaseToken?.bundleId }
    /// The app's Apple ID, wherever the payload carries it.
    public var appAppleId: Int64? { data?.appAppleId ?? summary?.appAppleId ?? appData?.appAppleId ?? externalPurchaseToken?.appAppleId }
    /// The environment, wherever the payload carries it.
    public var environment: String? { data?.environment ?? summary?.environment ?? appData?.environment }
}

/// `data` of a notification: the app and the signed transaction and renewal info.
public struct NotificationData: Sendable, Hashable {
    public var environment: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    /// The subscription's status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int64?
    public var consumptionRequestReason: String?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        environment = try r.string("environment")
        appAppleId = try r.int("appAppleId")
        bundleId = try r.string("bundleId")
        bundleVersion = try r.string("bundleVersion")
        signedTransactionInfo = try r.string("signedTransactionInfo")
        signedRenewalInfo = try r.string("signedRenewalInfo")
        status = try r.int("status")
        consumptionRequestReason = try r.string("consumptionRequestReason")
    }
}

/// `summary` of a notification (RENEWAL_EXTENSION with subtype SUMMARY).
public struct NotificationSummary: Sendable, Hashable {
    public var requestIdentifier: String?
    public var environment: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    public var storefrontCountryCodes: [String]?
    public var failedCount: Int64?
    public var succeededCount: Int64?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        requestIdentifier = try r.string("requestIdentifier")
        environment = try r.string("environment")
        appAppleId = try r.int("appAppleId")
        bundleId = try r.string("bundleId")
        productId = try r.string("productId")
        storefrontCountryCodes = try r.stringArray("storefrontCountryCodes")
        failedCount = try r.int("failedCount")
        succeededCount = try r.int("succeededCount")
    }
}

/// `externalPurchaseToken` of an EXTERNAL_PURCHASE_TOKEN notification.
public struct ExternalPurchaseToken: Sendable, Hashable {
    public var externalPurchaseId: String?
    public var tokenCreationDate: Int64?
    public var appAppleId: Int64?
    public var bundleId: String?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        externalPurchaseId = try r.string("externalPurchaseId")
        tokenCreationDate = try r.date("tokenCreationDate")
        appAppleId = try r.int("appAppleId")
        bundleId = try r.string("bundleId")
    }
}

/// `appData` of app-level notifications (for example RESCIND_CONSENT).
public struct AppData: Sendable, Hashable {
    public var appAppleId: Int64?
    public var bundleId: String?
    public var environment: String?
    public var signedAppTransactionInfo: String?

    init(_ r: FieldReader) throws(PayloadDecodingError) {
        appAppleId = try r.int("appAppleId")
        bundleId = try r.string("bundleId")
        environment = try r.string("environment")
        signedAppTransactionInfo = try r.string("signedAppTransactionInfo")
    }
}
