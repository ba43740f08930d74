import EntitlementCore

/// What happened to one input item, as `ingest` prints it.
public struct IngestResult: Sendable, Hashable, JSONRepresentable {
    public enum Outcome: String, Sendable, Hashable {
        case appended, duplicate, rejected
        /// The document held no item (an empty history page): one line says so, so that
        /// acknowledgments stay one per document sent.
        case empty
        /// Committed locally but not acknowledged (`REPLICATION_TIMEOUT`): send it again.
        case error
    }

    public var outcome: Outcome
    public var kind: EventKind?
    public var eventId: String?
    /// The customer key: `appTransactionId`, or `otid:<originalTransactionId>`.
    public var appTransactionId: String?
    public var errorCode: String?
    public var errorMessage: String?
    /// The 1-based number of the input document the item came from: for NDJSON, its line
    /// number (blank lines counted); else its position in the batch handed to the engine.
    public var input: Int?
    /// For a receipt event: the original transaction id of its entries, which
    /// `appTransactionId` stops naming once signed data links it to an appTransactionId
    /// (specification section 16). Not printed.
    public var originalTransactionId: String?

    public init(
        outcome: Outcome, kind: EventKind? = nil, eventId: String? = nil, appTransactionId: String? = nil,
        errorCode: String? = nil, errorMessage: String? = nil, input: Int? = nil
    ) {
        self.outcome = outcome
        self.kind = kind
        self.eventId = eventId
        self.appTransactionId = appTransactionId
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.input = input
    }

    /// The specification's NDJSON line.
    public func json() -> JSONValue {
        var object = JSONObject()
        if let input { object["input"] = .int(Int64(input)) }
        object["result"] = .string(outcome.rawValue)
        switch outcome {
        case .appended, .duplicate:
            object["kind"] = kind.map { .string($0.rawValue) } ?? .null
            object["eventId"] = eventId.map { .string($0) } ?? .null
            object["appTransactionId"] = appTransactionId.map { .string($0) } ?? .null
        case .rejected, .error:
            object["error"] = ["code": .string(errorCode ?? "MALFORMED_INPUT"), "message": .string(errorMessage ?? "")]
        case .empty:
            break
        }
        return .object(object)
    }
}
