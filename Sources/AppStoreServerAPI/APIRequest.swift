public import JSONAndBase64

/// One App Store Server API call: method, path, query and JSON body.
///
/// Each endpoint the engine uses is a static factory below; adding one is adding a
/// factory (the client signs, sends, retries and decodes every request the same way).
public struct APIRequest: Sendable, CustomStringConvertible {
    public var method: String
    /// The path, its variable parts percent-encoded (the factories do it).
    public var path: String
    public var query: [(name: String, value: String)]
    public var body: JSONValue?

    public init(method: String, path: String, query: [(name: String, value: String)] = [], body: JSONValue? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.body = body
    }

    /// The path with its query string, percent-encoded.
    public var target: String {
        guard !query.isEmpty else { return path }
        return path + "?" + query.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    /// `METHOD /path?query`, as the `sync` lines print it.
    public var description: String { method + " " + target }

    /// Percent-encodes everything but RFC 3986's unreserved characters; a whole `.` or
    /// `..` is encoded too, so that an id used as a path segment never reads as a dot
    /// segment (`/inApps/v2/history/..` would name another path once normalized).
    public static func encode(_ text: String) -> String {
        if text == "." || text == ".." { return String(repeating: "%2E", count: text.utf8.count) }
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }
}

extension APIRequest {
    /// Get Notification History: `POST /inApps/v1/notifications/history`, up to 20
    /// notifications per page; pass the previous page's `paginationToken` for the next.
    public static func notificationHistory(startDate: Int64, endDate: Int64, onlyFailures: Bool, paginationToken: String?) -> APIRequest {
        var body = JSONObject([("startDate", .int(startDate)), ("endDate", .int(endDate))])
        if onlyFailures { body["onlyFailures"] = .bool(true) }
        return APIRequest(
            method: "POST", path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: .object(body))
    }

    /// Get Transaction History (v2): `GET /inApps/v2/history/{transactionId}`, ascending by
    /// modification; pass the previous page's `revision` for the next.
    public static func transactionHistory(transactionId: String, revision: String?) -> APIRequest {
        APIRequest(
            method: "GET", path: "/inApps/v2/history/" + encode(transactionId),
            query: revision.map { [("revision", $0)] } ?? [])
    }

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    public static func subscriptionStatuses(transactionId: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/subscriptions/" + encode(transactionId))
    }

    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}`.
    public static func appTransactionInfo(transactionId: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/transactions/appTransactions/" + encode(transactionId))
    }

    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
    /// with `{"appAccountToken": UUID}`.
    public static func setAppAccountToken(originalTransactionId: String, appAccountToken: String) -> APIRequest {
        APIRequest(
            method: "PUT", path: "/inApps/v1/transactions/" + encode(originalTransactionId) + "/appAccountToken",
            body: ["appAccountToken": .string(appAccountToken)])
    }

    /// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`
    /// with a ConsumptionRequest body (`customerConsented`, `deliveryStatus`, ...); Apple answers `202`.
    public static func sendConsumption(transactionId: String, body: JSONValue) -> APIRequest {
        APIRequest(method: "PUT", path: "/inApps/v2/transactions/consumption/" + encode(transactionId), body: body)
    }
}

extension APIRequest {
    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}`; Apple answers
    /// `{"signedTransactionInfo": JWS}`.
    public static func transactionInfo(transactionId: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/transactions/" + encode(transactionId))
    }

    /// Get Refund History (v2): `GET /inApps/v2/refund/lookup/{transactionId}`; Apple answers
    /// `{"signedTransactions", "revision", "hasMore"}`: pass the previous page's `revision` for the next.
    public static func refundHistory(transactionId: String, revision: String?) -> APIRequest {
        APIRequest(
            method: "GET", path: "/inApps/v2/refund/lookup/" + encode(transactionId),
            query: revision.map { [("revision", $0)] } ?? [])
    }

    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}`; Apple answers `{"status", "signedTransactions"}`
    /// (`status` 0 valid, 1 invalid).
    public static func lookUpOrderId(orderId: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/lookup/" + encode(orderId))
    }

    /// Finish Transaction: `POST /inApps/v1/transactions/{transactionId}/finish`, no body.
    public static func finishTransaction(transactionId: String) -> APIRequest {
        APIRequest(method: "POST", path: "/inApps/v1/transactions/" + encode(transactionId) + "/finish")
    }

    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`
    /// with `{"extendByDays", "extendReasonCode", "requestIdentifier"}`; Apple answers
    /// `{"originalTransactionId", "webOrderLineItemId", "success", "effectiveDate"}`.
    public static func extendRenewalDate(
        originalTransactionId: String, extendByDays: Int, extendReasonCode: Int, requestIdentifier: String
    ) -> APIRequest {
        APIRequest(
            method: "PUT", path: "/inApps/v1/subscriptions/extend/" + encode(originalTransactionId),
            body: .object(
                JSONObject([
                    ("extendByDays", .int(Int64(extendByDays))), ("extendReasonCode", .int(Int64(extendReasonCode))),
                    ("requestIdentifier", .string(requestIdentifier)),
                ])))
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers: `POST
    /// /inApps/v1/subscriptions/extend/mass` with `{"extendByDays", "extendReasonCode",
    /// "requestIdentifier", "storefrontCountryCodes", "productId"}` (`storefrontCountryCodes`
    /// left out when empty: every storefront); Apple answers `{"requestIdentifier"}`.
    public static func massExtendRenewalDate(
        productId: String, extendByDays: Int, extendReasonCode: Int, requestIdentifier: String, storefrontCountryCodes: [String]
    ) -> APIRequest {
        var body = JSONObject([
            ("extendByDays", .int(Int64(extendByDays))), ("extendReasonCode", .int(Int64(extendReasonCode))),
            ("requestIdentifier", .string(requestIdentifier)),
        ])
        if !storefrontCountryCodes.isEmpty { body["storefrontCountryCodes"] = .array(storefrontCountryCodes.map(JSONValue.string)) }
        body["productId"] = .string(productId)
        return APIRequest(method: "POST", path: "/inApps/v1/subscriptions/extend/mass", body: .object(body))
    }

    /// Get Status of Subscription Renewal Date Extensions: `GET
    /// /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`; Apple answers
    /// `{"requestIdentifier", "complete", "completeDate", "succeededCount", "failedCount"}`.
    public static func massExtensionStatus(productId: String, requestIdentifier: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/subscriptions/extend/mass/" + encode(productId) + "/" + encode(requestIdentifier))
    }

    /// Request a Test Notification: `POST /inApps/v1/notifications/test`, no body; Apple
    /// answers `{"testNotificationToken"}`.
    public static func requestTestNotification() -> APIRequest {
        APIRequest(method: "POST", path: "/inApps/v1/notifications/test")
    }

    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`;
    /// Apple answers `{"signedPayload", "sendAttempts": [{"attemptDate", "sendAttemptResult"}]}`.
    public static func testNotificationStatus(token: String) -> APIRequest {
        APIRequest(method: "GET", path: "/inApps/v1/notifications/test/" + encode(token))
    }
}
