import EntitlementCore
internal import EventStore

/// The `async` twins of the usage and consumption API (the pattern of ``Engine``'s
/// async API: the work runs on the engine's threads, the caller is suspended).
extension Engine {
    /// Logs a usage record, on the engine's threads. See ``usage(_:now:)``.
    public func usage(_ request: UsageRequest, now: Int64? = nil) async throws(EngineError) -> UsageAnswer {
        try await onEngineThread { () throws(EngineError) in try self.usage(request, now: now) }
    }

    /// What to answer Apple about a purchase, on the engine's threads. See ``consumptionInfo(for:now:)``.
    public func consumptionInfo(for transactionId: String, now: Int64? = nil) async throws(EngineError) -> ConsumptionInfo? {
        try await onEngineThread { () throws(EngineError) in try self.consumptionInfo(for: transactionId, now: now) }
    }

    /// The open CONSUMPTION_REQUESTs, on the engine's threads. See ``pendingConsumptionRequests(now:)``.
    public func pendingConsumptionRequests(now: Int64? = nil) async throws(EngineError) -> [PendingConsumptionRequest] {
        try await onEngineThread { () throws(EngineError) in try self.pendingConsumptionRequests(now: now) }
    }

    /// Sends a consumption answer to Apple and records it, on a thread of its own (a
    /// network round trip may take seconds). See ``sendConsumptionInformation(_:options:client:now:)``.
    public func sendConsumptionInformation(
        _ info: ConsumptionInfo, options: ConsumptionOptions, client: AppStoreServerAPIClient, now: Int64? = nil
    ) async throws(EngineError) -> ConsumptionSendResult {
        try await onOwnThread("entitlements.consumption") { () throws(EngineError) in
            try self.sendConsumptionInformation(info, options: options, client: client, now: now)
        }
    }
}

// The answers encode to the JSON the command line prints.

extension UsageAnswer: JSONRepresentable {}

extension UsageReceipt: JSONRepresentable {}

extension PendingConsumptionRequest: JSONRepresentable {}

extension ConsumptionSendResult: JSONRepresentable {}

extension ConsumptionInfo: Encodable {
    /// `{"transactionId", "appTransactionId", "consumptionPercentage", "basis", "requestedAt",
    /// "deadline", "pastDeadline", "answered", "body"}` (the body with the default options).
    public func encode(to encoder: any Encoder) throws {
        let value: JSONValue = [
            "transactionId": .string(transactionId),
            "appTransactionId": .string(appTransactionId),
            "consumptionPercentage": share.percentage.map { .int($0) } ?? .null,
            "basis": .string(share.basis.rawValue),
            "requestedAt": request.map { .int($0.requestedAt) } ?? .null,
            "deadline": deadline.map { .int($0) } ?? .null,
            "pastDeadline": .bool(pastDeadline),
            "answered": .bool(answered),
            "body": body(),
        ]
        try value.encode(to: encoder)
    }
}
