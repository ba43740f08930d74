import EntitlementCore

/// What became of a usage record handed to ``EventStore/appendUsage(_:atGiven:rules:receivedAt:)``.
public enum UsageAppendOutcome: Sendable {
    /// Logged at `seq`; `state` is the customer's state after it.
    case appended(seq: Int64, state: CustomerState)
    /// A record with the same id and content was logged before, at `seq`: nothing appended.
    case duplicate(seq: Int64, state: CustomerState)
    /// Not logged, and why (``UsageRefusal``: `USAGE_CONFLICT`, `NOT_FOUND`, `INSUFFICIENT_BALANCE`, ...).
    case refused(UsageRefusal)
}

extension EventStore {
    /// The idempotency key of a usage record.
    public static func usageIdentity(_ usageId: String) -> String { "usage:" + usageId }

    /// Logs a usage record, in one `BEGIN IMMEDIATE` transaction with its facts and
    /// the customer's projection; refuses it (nothing written) when its id was used
    /// for other content (`USAGE_CONFLICT`), when the customer has no projection
    /// (`NOT_FOUND`), or when ``UsageCheck/refusal(for:state:rules:)`` refuses it,
    /// checked against the state read inside the same transaction.
    ///
    /// The event's raw is the record's canonical JSON (hash-chained like a JWS;
    /// `"source": "operator"`), its `signed_date` the record's `at`.
    public func appendUsage(_ usage: UsageFacts, atGiven: Bool, rules: Rules, receivedAt: Int64) throws(StoreError) -> UsageAppendOutcome {
        var head: LogHead? = nil
        let outcome = try mapped {
            try connection.write { () throws -> (UsageAppendOutcome, Connection.Completion) in
                let identity = Self.usageIdentity(usage.usageId)
                let find = try connection.cached("SELECT seq, raw FROM events WHERE identity = ?")
                try find.bind(1, identity)
                if try find.step() {
                    let seq = find.int64(0)
                    let raw = find.string(1) ?? ""
                    find.reset()
                    guard let json = try? JSONParser().parse(Array(raw.utf8)), let existing = UsageFacts(json: json) else {
                        throw StoreError(code: .unreadable, message: "the usage record logged at seq \(seq) cannot be read back")
                    }
                    var retry = usage
                    if try resolve(usage.customerKey) == resolve(existing.customerKey) {
                        // The same customer, named since under the key it merged into (or the other way round).
                        retry.appTransactionId = existing.appTransactionId
                        retry.originalTransactionId = existing.originalTransactionId
                    }
                    guard UsageCheck.sameContent(existing, retry, atGiven: atGiven) else {
                        let refusal = UsageRefusal(
                            code: "USAGE_CONFLICT",
                            message: "usage id \(usage.usageId) was recorded at seq \(seq) with other content (\(JSONWriter.string(existing.canonicalJSON))); use a new id for a new record")
                        return (.refused(refusal), .rollback)
                    }
                    let key = try resolve(existing.customerKey)
                    let state = try projection(of: key)?.state ?? CustomerState(key: key)
                    return (.duplicate(seq: seq, state: state), .rollback)
                }
                find.reset()

                let key = usage.customerKey
                guard let stored = try projection(of: key) else {
                    return (.refused(UsageRefusal(code: "NOT_FOUND", message: "no events for customer \(key)")), .rollback)
                }
                if let refusal = UsageCheck.refusal(for: usage, state: stored.state, rules: rules) {
                    return (.refused(refusal), .rollback)
                }

                let (event, appendedHead) = try insertOperatorEvent(
                    OperatorEventRow(
                        identity: identity, kind: OperatorKind.usage.rawValue, eventId: usage.usageId, customerKey: key,
                        appTransactionId: usage.appTransactionId, originalTransactionId: usage.originalTransactionId,
                        signedDate: usage.at, raw: JSONWriter.string(usage.canonicalJSON)),
                    body: .usage(usage), receivedAt: receivedAt)
                let seq = event.seq

                let generation = try currentEngineState().generation
                try project(key: key, events: [event], generation: generation, rules: rules)
                var state = stored.state
                try apply(event, to: &state, rules: rules)
                try recordLifecycle(of: key, state: state, rules: rules, now: receivedAt)
                head = appendedHead
                return (.appended(seq: seq, state: state), .commit)
            }
        }
        // After the commit, never before: the record never names a head the log may not reach.
        if case .appended = outcome, let head { recordHead(head) }
        return outcome
    }
}
