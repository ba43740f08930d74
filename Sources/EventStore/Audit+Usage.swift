import EntitlementCore

extension EventStore {
    /// What is wrong with the usage record logged at `seq` (its raw is the record's
    /// canonical JSON), or `nil`: the raw must be a well-formed record, the event's
    /// customer its customer, and the facts the reducers read exactly its facts.
    func usageProblem(seq: Int64, raw: String, storedKey: String?, factsOf: Statement) throws -> String? {
        guard let json = try? JSONParser().parse(Array(raw.utf8)), let usage = UsageFacts(json: json) else {
            return "the usage record is not well-formed: it was altered"
        }
        let event = Event(seq: seq, body: .usage(usage))
        if storedKey != usage.customerKey {
            return "the event's customer \(storedKey ?? "none") is not the usage record's \(usage.customerKey): it was altered"
        }
        factsOf.reset()
        try factsOf.bind(1, usage.customerKey)
        try factsOf.bind(2, seq)
        guard try factsOf.step() else { return "the facts the reducers read for this event are missing" }
        let matches = factsOf.withBlob(0) { bytes in
            (try? EventCodec.decode(bytes, seq: seq)).map(EventCodec.encode) == EventCodec.encode(event)
        }
        factsOf.reset()
        return matches ? nil : "the facts the reducers read do not match the usage record: they were altered"
    }
}
