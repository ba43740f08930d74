/// A decoded signed AppTransaction (`AppTransaction` of Get App Transaction Info).
public struct AppTransactionPayload: Sendable, Hashable {
    public var json: JSONValue
    /// The environment: `Production`, `Sandbox`, `Xcode`.
    public var receiptType: String
    public var appAppleId: Int64?
    public var bundleId: String
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    /// When the AppTransaction was signed: its validation time.
    public var receiptCreationDate: Int64
    public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: Int64?
    public var appTransactionId: String?
    public var originalPlatform: String?

    public init(json: JSONValue) throws(PayloadDecodingError) {
        let r = try FieldReader(json)
        self.json = json
        receiptType = try r.requiredString("receiptType")
        appAppleId = try r.int("appAppleId")
        bundleId = try r.requiredString("bundleId")
        applicationVersion = try r.string("applicationVersion")
        versionExternalIdentifier = try r.int("versionExternalIdentifier")
        receiptCreationDate = try r.requiredDate("receiptCreationDate")
        originalPurchaseDate = try r.date("originalPurchaseDate")
        originalApplicationVersion = try r.string("originalApplicationVersion")
        deviceVerification = try r.string("deviceVerification")
        deviceVerificationNonce = try r.string("deviceVerificationNonce")
        preorderDate = try r.date("preorderDate")
        appTransactionId = try r.string("appTransactionId").flatMap { $0.isEmpty ? nil : $0 }
        originalPlatform = try r.string("originalPlatform")
    }
}
