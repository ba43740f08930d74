import EntitlementCore

extension EventStore {
    /// What is wrong with the operator record logged at `seq` as `kind` (its raw is the
    /// record's canonical JSON), or `nil`: the raw must be a well-formed record of that
    /// kind, and the facts the reducers read (filed under the event's customer) exactly
    /// its facts.
    func operatorRecordProblem(seq: Int64, kind: OperatorKind, raw: String, storedKey: String?, factsOf: Statement) throws -> String? {
        guard let json = try? JSONParser().parse(Array(raw.utf8)), let record = OperatorRecord(json: json), record.kind == kind else {
            return "the operator record is not a well-formed \(kind.rawValue) record: it was altered"
        }
        let event = Event(seq: seq, body: .operatorAction(record))
        guard let storedKey else { return "the operator record names no customer: it was altered" }
        factsOf.reset()
        try factsOf.bind(1, storedKey)
        try factsOf.bind(2, seq)
        guard try factsOf.step() else { return "the facts the reducers read for this event are missing" }
        let matches = factsOf.withBlob(0) { bytes in
            (try? EventCodec.decode(bytes, seq: seq)).map(EventCodec.encode) == EventCodec.encode(event)
        }
        factsOf.reset()
        return matches ? nil : "the facts the reducers read do not match the operator record: they were altered"
    }
}
