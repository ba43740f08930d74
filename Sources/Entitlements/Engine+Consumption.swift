import EntitlementCore
internal import EventStore
import Foundation

/// What the engine knows to answer Apple's CONSUMPTION_REQUEST about one purchase
/// (Send Consumption Information V2, specification section 11).
public struct ConsumptionInfo: Sendable, Hashable {
    public var transactionId: String
    /// The customer holding the purchase.
    public var appTransactionId: CustomerKey
    /// How much of it was consumed (`percentage` `nil` for an auto-renewable).
    public var share: ConsumptionShare
    /// The latest CONSUMPTION_REQUEST about it, if one was received.
    public var request: StoredConsumptionRequest?
    /// When Apple stops accepting an answer: the request's `signedDate` + 12 hours.
    public var deadline: Int64? { request.map { $0.requestedAt + StoredConsumptionRequest.answerWindow } }
    /// Whether the latest request's window had closed at the moment asked about.
    public var pastDeadline: Bool
    /// Whether an answer Apple accepted was sent after the latest request.
    public var answered: Bool
    /// The environments of the customer's data: an answer about Sandbox data goes to Apple's sandbox host.
    public var environments: EnvironmentSet = []

    /// The ConsumptionRequest V2 body: `customerConsented`, `consumptionPercentage`
    /// (omitted for an auto-renewable), `deliveryStatus`, `refundPreference` (when
    /// given), `sampleContentProvided`.
    public func body(_ options: ConsumptionOptions = ConsumptionOptions()) -> JSONValue {
        var object = JSONObject()
        object["customerConsented"] = .bool(options.customerConsented)
        if let percentage = share.percentage { object["consumptionPercentage"] = .int(percentage) }
        object["deliveryStatus"] = .string(options.deliveryStatus)
        if let preference = options.refundPreference { object["refundPreference"] = .string(preference) }
        object["sampleContentProvided"] = .bool(options.sampleContentProvided)
        return .object(object)
    }
}

/// What the operator adds to a consumption answer.
public struct ConsumptionOptions: Sendable, Hashable {
    public var customerConsented: Bool
    public var sampleContentProvided: Bool
    /// `DELIVERED` (the default: the engine granted it), `UNDELIVERED_QUALITY_ISSUE`,
    /// `UNDELIVERED_WRONG_ITEM`, `UNDELIVERED_SERVER_OUTAGE`, `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// `DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`, or `nil` to leave it out.
    public var refundPreference: String?

    public static let deliveryStatuses = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    public static let refundPreferences = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public init(
        customerConsented: Bool = false, sampleContentProvided: Bool = false, deliveryStatus: String = "DELIVERED",
        refundPreference: String? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.refundPreference = refundPreference
    }
}

/// A CONSUMPTION_REQUEST still waiting for its answer.
public struct PendingConsumptionRequest: Sendable, Hashable {
    public var transactionId: String
    public var appTransactionId: CustomerKey?
    /// `data.consumptionRequestReason`, when Apple gave one.
    public var reason: String?
    /// The notification's `signedDate`.
    public var requestedAt: Int64
    /// `requestedAt` + 12 hours.
    public var deadline: Int64

    /// `{"transactionId", "appTransactionId", "reason", "requestedAt", "deadline"}`.
    public func json() -> JSONValue {
        [
            "transactionId": .string(transactionId),
            "appTransactionId": appTransactionId.map { .string($0) } ?? .null,
            "reason": reason.map { .string($0) } ?? .null,
            "requestedAt": .int(requestedAt),
            "deadline": .int(deadline),
        ]
    }
}

extension Engine {
    /// What to answer Apple about the purchase `transactionId`, or `nil` when no
    /// customer holds it.
    ///
    /// The consumed share is ``Consumption/share(of:in:rules:now:requestedAt:)``:
    /// usage recorded up to `now`, a pass's window at the latest request's
    /// `signedDate` (at `now` when no request was received).
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func consumptionInfo(for transactionId: String, now: Int64? = nil) throws(EngineError) -> ConsumptionInfo? {
        let now = now ?? Self.now()
        do {
            return try readers.withReader { store throws(StoreError) -> ConsumptionInfo? in
                guard let key = try Self.customerKey(.transactionId(transactionId), store: store),
                    let state = try store.projection(of: key)?.state
                else { return nil }
                let request = try store.consumptionRequests(transactionId: transactionId).last
                guard
                    let share = Consumption.share(
                        of: transactionId, in: state, rules: try activeRules(store).rules, now: now, requestedAt: request?.requestedAt ?? now)
                else { return nil }
                let answered =
                    try request.map { request throws(StoreError) in
                        try store.consumptionAnswers(transactionId: transactionId).contains { $0.accepted && $0.sentAt >= request.requestedAt }
                    } ?? false
                let pastDeadline = request.map { $0.deadline <= now } ?? false
                return ConsumptionInfo(
                    transactionId: transactionId, appTransactionId: key, share: share, request: request, pastDeadline: pastDeadline,
                    answered: answered, environments: state.environments)
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// The CONSUMPTION_REQUEST notifications not yet answered whose 12-hour window is
    /// open at `now`, oldest first: answer each before its `deadline`.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func pendingConsumptionRequests(now: Int64? = nil) throws(EngineError) -> [PendingConsumptionRequest] {
        let now = now ?? Self.now()
        do {
            return try readers.withReader { store throws(StoreError) in
                var pending: [PendingConsumptionRequest] = []
                for request in try store.pendingConsumptionRequests(now: now) {
                    // The customer as it answers now (an otid: key logged before its link answers as the linked one).
                    let customer = try request.customerKey.map { key throws(StoreError) in try store.resolveCustomer(key) }
                    pending.append(
                        PendingConsumptionRequest(
                            transactionId: request.transactionId, appTransactionId: customer, reason: request.reason,
                            requestedAt: request.requestedAt, deadline: request.deadline))
                }
                return pending
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// Records a Send Consumption Information request made and Apple's answer (an
    /// accepted answer takes the request off `pendingConsumptionRequests(now:)`).
    /// - Throws: ``EngineError`` when the database cannot be written.
    public func recordConsumptionAnswer(_ answer: StoredConsumptionAnswer) throws(EngineError) {
        do {
            try store.withLock { store throws(StoreError) in try store.recordConsumptionAnswer(answer) }
        } catch {
            throw EngineError(error)
        }
    }
}

/// What came of sending a consumption answer to Apple.
public struct ConsumptionSendResult: Sendable {
    /// The request as sent (`PUT /inApps/v2/transactions/consumption/{transactionId}`).
    public var request: String
    /// Apple's HTTP status (202 when accepted); `nil` when no answer came.
    public var status: Int?
    /// The failure, when Apple did not accept it.
    public var error: APIError?

    /// `{"request", "status", "accepted"}`, with `"error"` (and Apple's `errorCode`) on failure.
    public func json() -> JSONValue {
        if let error {
            var object = JSONObject()
            object["request"] = .string(request)
            object["status"] = error.status.map { .int(Int64($0)) } ?? .null
            object["accepted"] = false
            object["errorCode"] = error.apiErrorCode.map { .int($0) } ?? .null
            object["error"] = ["code": .string(error.code.rawValue), "message": .string(error.message)]
            return .object(object)
        }
        return ["request": .string(request), "status": status.map { .int(Int64($0)) } ?? .null, "accepted": true]
    }
}

extension APIRequest {
    /// Send Consumption Information (V2): `PUT /inApps/v2/transactions/consumption/{transactionId}`
    /// with a ConsumptionRequest body; Apple answers `202 Accepted`.
    public static func sendConsumptionInformation(transactionId: String, body: JSONValue) -> APIRequest {
        APIRequest(method: "PUT", path: "/inApps/v2/transactions/consumption/" + encode(transactionId), body: body)
    }
}

extension Engine {
    /// PUTs the answer `info.body(options)` to Apple through `client` and records the
    /// request and Apple's answer (an accepted one takes the request off the pending list).
    /// - Throws: ``EngineError`` when the answer cannot be recorded.
    public func sendConsumptionInformation(
        _ info: ConsumptionInfo, options: ConsumptionOptions, client: AppStoreServerAPIClient, now: Int64? = nil
    ) throws(EngineError) -> ConsumptionSendResult {
        let body = info.body(options)
        let request = APIRequest.sendConsumptionInformation(transactionId: info.transactionId, body: body)
        let sentAt = now ?? Self.now()
        var result = ConsumptionSendResult(request: request.description, status: nil, error: nil)
        do {
            result.status = try client.send(request).status
        } catch {
            result.error = error
            result.status = error.status
        }
        try recordConsumptionAnswer(
            StoredConsumptionAnswer(
                transactionId: info.transactionId, sentAt: sentAt, body: JSONWriter.string(body), status: result.status.map(Int64.init),
                errorCode: result.error?.code.rawValue, errorMessage: result.error?.message))
        return result
    }
}
