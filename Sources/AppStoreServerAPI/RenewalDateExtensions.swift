import JSONAndBase64

/// Apple's `extendReasonCode`: why a renewal date is extended.
public enum ExtendReasonCode: Int, Sendable, Hashable, CaseIterable {
    case undeclared = 0
    case customerSatisfaction = 1
    case other = 2
    case serviceIssueOrOutage = 3
}

/// Apple's answer to Extend a Subscription Renewal Date.
public struct RenewalDateExtension: Sendable, Hashable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    /// Whether the renewal date was extended.
    public var success: Bool
    /// The new renewal date, in milliseconds since 1970.
    public var effectiveDate: Int64?

    init(_ json: JSONValue?) {
        if case .string(let text)? = json?["originalTransactionId"] { originalTransactionId = text }
        if case .string(let text)? = json?["webOrderLineItemId"] { webOrderLineItemId = text }
        success = json?["success"] == .bool(true)
        if case .int(let date)? = json?["effectiveDate"] { effectiveDate = date }
    }
}

/// Apple's answer to Get Status of Subscription Renewal Date Extensions.
public struct MassExtensionStatus: Sendable, Hashable {
    public var requestIdentifier: String?
    /// Whether Apple has extended every eligible subscription it will.
    public var complete: Bool
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?

    init(_ json: JSONValue?) {
        if case .string(let text)? = json?["requestIdentifier"] { requestIdentifier = text }
        complete = json?["complete"] == .bool(true)
        if case .int(let value)? = json?["completeDate"] { completeDate = value }
        if case .int(let value)? = json?["succeededCount"] { succeededCount = value }
        if case .int(let value)? = json?["failedCount"] { failedCount = value }
    }
}

/// Renewal date extensions (`entitlements extend`), typed. Each checks Apple's limits
/// (1 to ``maximumExtensionDays`` days, a request id of 1 to 128 characters) before any request.
extension AppStoreServerAPIClient {
    /// Apple extends a renewal date by at most 90 days.
    public static let maximumExtensionDays = 90

    /// Extend a Subscription Renewal Date of one customer's subscription.
    /// - Throws: ``APIError`` `INVALID_REQUEST` outside Apple's limits (nothing sent), else as ``send(_:)``.
    public func extendRenewalDate(
        originalTransactionId: String, days: Int, reason: ExtendReasonCode, requestIdentifier: String
    ) throws(APIError) -> RenewalDateExtension {
        let request = APIRequest.extendRenewalDate(
            originalTransactionId: originalTransactionId, extendByDays: days, extendReasonCode: reason.rawValue, requestIdentifier: requestIdentifier)
        try Self.checkExtension(days: days, requestIdentifier: requestIdentifier, request: request)
        return RenewalDateExtension(try send(request).json)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of `productId`, in
    /// `storefrontCountryCodes` (empty: every storefront).
    /// - Returns: the request identifier Apple acknowledged.
    /// - Throws: ``APIError`` `INVALID_REQUEST` outside Apple's limits (nothing sent), else as ``send(_:)``.
    public func extendRenewalDatesForAllActiveSubscribers(
        productId: String, days: Int, reason: ExtendReasonCode, requestIdentifier: String, storefrontCountryCodes: [String] = []
    ) throws(APIError) -> String {
        let request = APIRequest.massExtendRenewalDate(
            productId: productId, extendByDays: days, extendReasonCode: reason.rawValue, requestIdentifier: requestIdentifier,
            storefrontCountryCodes: storefrontCountryCodes)
        try Self.checkExtension(days: days, requestIdentifier: requestIdentifier, request: request)
        let json = try send(request).json
        if case .string(let acknowledged)? = json?["requestIdentifier"] { return acknowledged }
        return requestIdentifier
    }

    /// Get Status of Subscription Renewal Date Extensions of a mass extension.
    public func massExtensionStatus(productId: String, requestIdentifier: String) throws(APIError) -> MassExtensionStatus {
        MassExtensionStatus(try send(.massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier)).json)
    }

    static func checkExtension(days: Int, requestIdentifier: String, request: APIRequest) throws(APIError) {
        guard (1...maximumExtensionDays).contains(days) else {
            throw APIError(
                code: .invalidRequest, request: request.description, status: nil,
                message: "extendByDays \(days): Apple extends a renewal date by 1 to \(maximumExtensionDays) days")
        }
        guard !requestIdentifier.isEmpty, requestIdentifier.count <= 128 else {
            throw APIError(code: .invalidRequest, request: request.description, status: nil, message: "requestIdentifier must be 1 to 128 characters")
        }
    }
}
