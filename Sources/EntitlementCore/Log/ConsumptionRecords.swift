/// A CONSUMPTION_REQUEST notification as logged: Apple asking how much of a purchase
/// was consumed before it decides a refund (specification section 11).
public struct StoredConsumptionRequest: Sendable, Hashable {
    public var notificationUUID: String
    public var transactionId: String
    public var customerKey: CustomerKey?
    /// `data.consumptionRequestReason` (e.g. `UNINTENDED_PURCHASE`), when given.
    public var reason: String?
    /// The notification's `signedDate`.
    public var requestedAt: Int64

    /// How long Apple waits for an answer to a CONSUMPTION_REQUEST: 12 hours.
    public static let answerWindow: Int64 = 12 * 3_600_000

    /// When Apple stops accepting an answer: `requestedAt` + ``answerWindow``.
    public var deadline: Int64 { requestedAt + Self.answerWindow }

    public init(notificationUUID: String, transactionId: String, customerKey: CustomerKey?, reason: String?, requestedAt: Int64) {
        self.notificationUUID = notificationUUID
        self.transactionId = transactionId
        self.customerKey = customerKey
        self.reason = reason
        self.requestedAt = requestedAt
    }
}

/// One Send Consumption Information request made and what came of it.
public struct StoredConsumptionAnswer: Sendable, Hashable {
    public var transactionId: String
    public var sentAt: Int64
    /// The body sent (JSON).
    public var body: String
    /// Apple's HTTP status, `nil` when no answer came.
    public var status: Int64?
    public var errorCode: String?
    public var errorMessage: String?

    public init(transactionId: String, sentAt: Int64, body: String, status: Int64?, errorCode: String? = nil, errorMessage: String? = nil) {
        self.transactionId = transactionId
        self.sentAt = sentAt
        self.body = body
        self.status = status
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }

    /// Whether Apple accepted it (a 2xx status).
    public var accepted: Bool { status.map { (200..<300).contains($0) } ?? false }
}
