import EntitlementCore

/// What happened to one input item, as `ingest` prints it.
public struct IngestResult: Sendable, Hashable {
    public enum Outcome: String, Sendable, Hashable {
        case appended, duplicate, rejected
    }

    public var outcome: Outcome
    public var kind: EventKind?
    public var eventId: String?
    /// The customer key: `appTransactionId`, or `otid:<originalTransactionId>`.
    public var appTransactionId: String?
    public var errorCode: String?
    public var errorMessage: String?

    /// The contract's NDJSON line.
    public func json() -> JSONValue {
        var object = JSONObject()
        object["result"] = .string(outcome.rawValue)
        switch outcome {
        case .appended, .duplicate:
            object["kind"] = kind.map { .string($0.rawValue) } ?? .null
            object["eventId"] = eventId.map { .string($0) } ?? .null
            object["appTransactionId"] = appTransactionId.map { .string($0) } ?? .null
        case .rejected:
            object["error"] = ["code": .string(errorCode ?? "MALFORMED_INPUT"), "message": .string(errorMessage ?? "")]
        }
        return .object(object)
    }
}
