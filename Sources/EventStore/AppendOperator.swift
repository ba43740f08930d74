import EntitlementCore

/// What became of an operator record handed to ``EventStore/appendOperatorRecord(_:given:conflictCode:rules:receivedAt:check:)``.
public enum OperatorAppendOutcome: Sendable {
    /// Logged at `seq`: `record` as logged, `state` the state it was filed into, after it.
    case appended(seq: Int64, record: OperatorRecord, state: CustomerState)
    /// A record with the same identity and content was logged before, at `seq`: nothing appended.
    case duplicate(seq: Int64, record: OperatorRecord, state: CustomerState)
    /// Not logged, and why.
    case refused(OperatorRefusal)
}

extension EventStore {
    /// Logs an operator record (a grant, its revocation, a credit, a link), in one
    /// `BEGIN IMMEDIATE` transaction with its facts, the projection it is filed into,
    /// the changes and lifecycle feeds; refuses it (nothing written) when its identity
    /// was used for other content (`conflictCode`), when a revocation names no grant
    /// (`NOT_FOUND`), or when `check` refuses it against the state read inside the
    /// same transaction.
    ///
    /// A revocation is filed where its grant is (its target is set from the grant's).
    /// A record about a customer must name one that has a projection (the caller
    /// resolves it); a record about an app user alone starts that user's state.
    /// The event's raw is the record's canonical JSON (`"source": "operator"`), its
    /// `signed_date` the record's `recordedAt`.
    public func appendOperatorRecord(
        _ record: OperatorRecord, given: OperatorCheck.GivenMoments, conflictCode: String, rules: Rules, receivedAt: Int64,
        check: (CustomerState, EventStore) throws -> OperatorRefusal?
    ) throws(StoreError) -> OperatorAppendOutcome {
        var head: LogHead? = nil
        let outcome = try mapped {
            try connection.write { () throws -> (OperatorAppendOutcome, Connection.Completion) in
                var record = record
                let identity = record.identity
                if let (seq, existing) = try loggedOperatorRecord(identity: identity) {
                    if record.kind == .grantRevoked || record.appTransactionId == nil && record.originalTransactionId == nil
                        && record.appUserId == nil
                    {
                        record.target(existing.customerKey)
                    } else if try resolveCustomer(record.customerKey) == resolveCustomer(existing.customerKey) {
                        // The same customer, named since under the key it merged into.
                        let linkedUser = record.appUserId
                        record.target(existing.customerKey)
                        record.appUserId = linkedUser
                    }
                    guard OperatorCheck.sameContent(existing, record, given: given) else {
                        // A revocation's id is its grant's: there is no other id to use.
                        let advice =
                            record.kind == .grantRevoked
                            ? "grant \(record.id) is revoked once; that revocation stands"
                            : "use a new id for a new \(record.kind.rawValue)"
                        let refusal = OperatorRefusal(
                            code: conflictCode,
                            message: "id \(record.id) was recorded at seq \(seq) with other content (\(JSONWriter.string(existing.canonicalJSON))); \(advice)")
                        return (.refused(refusal), .rollback)
                    }
                    let key = try resolveCustomer(existing.customerKey)
                    let state = try projection(of: key)?.state ?? CustomerState(key: key)
                    return (.duplicate(seq: seq, record: existing, state: state), .rollback)
                }

                // An id names one operator action: a grant, a credit or a link (a revocation
                // takes its grant's).
                let actions: [OperatorKind] = [.grant, .credit, .link]
                if actions.contains(record.kind) {
                    for other in actions where other != record.kind {
                        guard let (seq, _) = try loggedOperatorRecord(identity: other.rawValue + ":" + record.id) else { continue }
                        let refusal = OperatorRefusal(
                            code: conflictCode,
                            message: "id \(record.id) was recorded at seq \(seq) for a \(other.rawValue); use a new id for a new \(record.kind.rawValue)")
                        return (.refused(refusal), .rollback)
                    }
                }

                if case .grantRevoked = record.action {
                    guard let (_, grant) = try loggedOperatorRecord(identity: OperatorKind.grant.rawValue + ":" + record.id) else {
                        return (.refused(OperatorRefusal(code: "NOT_FOUND", message: "no grant with id \(record.id)")), .rollback)
                    }
                    record.target(try resolveCustomer(grant.customerKey))
                }

                let key = record.customerKey
                let stored = try projection(of: key)
                if stored == nil && OperatorRecord.appUser(ofKey: key) == nil {
                    return (.refused(OperatorRefusal(code: "NOT_FOUND", message: "no events for customer \(key)")), .rollback)
                }
                let before = stored?.state ?? CustomerState(key: key)
                if let refusal = try check(before, self) { return (.refused(refusal), .rollback) }

                let (event, appendedHead) = try insertOperatorEvent(
                    OperatorEventRow(
                        identity: identity, kind: record.kind.rawValue, eventId: record.id, customerKey: key,
                        appTransactionId: record.appTransactionId, originalTransactionId: record.originalTransactionId,
                        signedDate: record.recordedAt, raw: JSONWriter.string(record.canonicalJSON)),
                    body: .operatorAction(record), receivedAt: receivedAt)
                let seq = event.seq
                if case .link = record.action, let appUserId = record.appUserId {
                    let link = try connection.cached("INSERT OR IGNORE INTO app_user_links (app_user_id, customer_key) VALUES (?, ?)")
                    try link.bind(1, appUserId)
                    try link.bind(2, key)
                    try link.step()
                }

                let generation = try currentEngineState().generation
                try project(key: key, events: [event], generation: generation, rules: rules)
                var state = before
                try apply(event, to: &state, rules: rules)
                try recordChanges(of: key, state: state, rules: rules, now: receivedAt, cause: .event)
                try recordLifecycle(of: key, state: state, rules: rules, now: receivedAt)
                head = appendedHead
                return (.appended(seq: seq, record: record, state: state), .commit)
            }
        }
        // After the commit, never before: the record never names a head the log may not reach.
        if case .appended = outcome, let head { recordHead(head) }
        return outcome
    }

    /// The operator record logged under `identity`, and its seq.
    private func loggedOperatorRecord(identity: String) throws -> (Int64, OperatorRecord)? {
        let find = try connection.cached("SELECT seq, raw FROM events WHERE identity = ?")
        try find.bind(1, identity)
        defer { find.reset() }
        guard try find.step() else { return nil }
        let seq = find.int64(0)
        let raw = find.string(1) ?? ""
        guard let json = try? JSONParser().parse(Array(raw.utf8)), let existing = OperatorRecord(json: json) else {
            throw StoreError(code: .unreadable, message: "the operator record logged at seq \(seq) cannot be read back")
        }
        return (seq, existing)
    }

    /// Every customer key an app user was ever linked to (the candidates: which link
    /// stands is decided from each customer's state).
    public func customers(everLinkedTo appUserId: String) throws(StoreError) -> [CustomerKey] {
        try mapped {
            let statement = try connection.cached(
                "SELECT customer_key FROM app_user_links WHERE app_user_id = ? ORDER BY customer_key")
            defer { statement.reset() }
            try statement.bind(1, appUserId)
            var keys: [CustomerKey] = []
            while try statement.step() { keys.append(statement.string(0) ?? "") }
            return keys
        }
    }
}
