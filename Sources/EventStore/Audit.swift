import EntitlementCore

/// The first event found that does not match the log's hash chain or its signature.
public struct AuditFinding: Sendable, Hashable {
    public var seq: Int64
    public var identity: String
    public var problem: String
}

/// What an audit of the log found.
public struct AuditReport: Sendable {
    public var events: Int64
    /// The first event that does not match, or `nil` when the whole log checks out.
    public var firstMismatch: AuditFinding?
    /// Whether the immutability triggers are in place.
    public var triggersPresent: Bool
    /// The hash of the last event checked (hex). The chain cannot reveal that
    /// the newest events were deleted: record this outside the database and
    /// compare it on the next audit.
    public var headHash: String = ""
    /// The sequence number of the last event checked.
    public var headSeq: Int64 = 0
}

extension EventStore {
    /// The chained hash of an event: SHA-256(prev_hash || seq (8 bytes, big-endian) || identity || 0 || raw).
    static func chainHash(prevHash: [UInt8], seq: Int64, identity: String, raw: String, hash: HashFunction) -> [UInt8] {
        var material = prevHash
        material.reserveCapacity(prevHash.count + 8 + identity.utf8.count + raw.utf8.count + 1)
        withUnsafeBytes(of: seq.bigEndian) { material.append(contentsOf: $0) }
        material.append(contentsOf: identity.utf8)
        material.append(0)
        material.append(contentsOf: raw.utf8)
        return hash(material)
    }

    /// Recomputes the hash chain over the whole log and, through `verify`,
    /// re-checks every stored JWS. Stops at the first event that does not match.
    ///
    /// - Parameter verify: given the event's kind and raw JWS, returns `nil`
    ///   when it verifies, else what is wrong.
    public func audit(
        verify: (EventKind, String) -> String?, progress: (Int64) -> Void = { _ in }
    ) throws(StoreError) -> AuditReport {
        try audit(reverify: { kind, raw in (verify(kind, raw), nil) }, progress: progress)
    }

    /// Recomputes the hash chain over the whole log and, through `reverify`,
    /// re-checks every stored JWS; where `reverify` also returns the verified
    /// input, checks that the facts the reducers read (`event_facts`) and the
    /// event's customer are exactly what that signed input says, and that no
    /// facts belong to no event: the reducers' input is covered, not only the log.
    /// Stops at the first event that does not match.
    ///
    /// - Parameter reverify: given the event's kind and raw JWS, returns what is
    ///   wrong (`nil` when it verifies) and, when it verifies, the verified input.
    public func audit(
        reverify: (EventKind, String) -> (problem: String?, input: VerifiedInput?), progress: (Int64) -> Void = { _ in }
    ) throws(StoreError) -> AuditReport {
        try mapped {
            let triggers = try connection.scalarInt(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ('events_are_immutable_update', 'events_are_immutable_delete')") ?? 0
            var report = AuditReport(events: 0, firstMismatch: nil, triggersPresent: triggers == 2)
            try connection.read {
                let scan = try connection.prepare("SELECT seq, identity, kind, raw, prev_hash, hash, customer_key FROM events ORDER BY seq")
                let factsOf = try connection.prepare("SELECT facts FROM event_facts WHERE customer_key = ? AND seq = ?")
                var expectedPrev = [UInt8](repeating: 0, count: 32)
                var expectedSeq: Int64 = 1
                var factsChecked: Int64 = 0
                var everyFactChecked = true
                while try scan.step() {
                    let seq = scan.int64(0)
                    let identity = scan.string(1) ?? ""
                    let kind = scan.string(2) ?? ""
                    let raw = scan.string(3) ?? ""
                    let prev = scan.blob(4) ?? []
                    let stored = scan.blob(5) ?? []
                    let storedKey = scan.string(6)
                    report.events += 1
                    func mismatch(_ problem: String) { report.firstMismatch = AuditFinding(seq: seq, identity: identity, problem: problem) }
                    if seq != expectedSeq {
                        mismatch("sequence jumps from \(expectedSeq - 1) to \(seq): events were removed")
                        return
                    }
                    if prev != expectedPrev {
                        mismatch("prev_hash does not match the previous event's hash: the chain was broken before this event")
                        return
                    }
                    let recomputed = Self.chainHash(prevHash: prev, seq: seq, identity: identity, raw: raw, hash: hash)
                    if recomputed != stored {
                        mismatch("hash does not match the stored JWS: the event was altered")
                        return
                    }
                    guard let eventKind = EventKind(rawValue: kind) else {
                        mismatch("unknown kind \(kind)")
                        return
                    }
                    if eventKind == .usage {
                        // The operator's word: no signature, but the facts must be what the logged record says.
                        if let problem = try usageProblem(seq: seq, raw: raw, storedKey: storedKey, factsOf: factsOf) {
                            mismatch(problem)
                            return
                        }
                        factsChecked += 1
                    }
                    let (problem, input) = eventKind == .usage ? (nil, nil) : reverify(eventKind, raw)
                    if let problem {
                        mismatch("stored JWS no longer verifies: \(problem)")
                        return
                    }
                    if let input {
                        // What the reducers read must be what was signed.
                        let event = Event(seq: seq, input: input)
                        if storedKey != event.customerKey {
                            mismatch("the event's customer \(storedKey ?? "none") is not the signed data's \(event.customerKey ?? "none"): it was altered")
                            return
                        }
                        if let key = event.customerKey {
                            factsOf.reset()
                            try factsOf.bind(1, key)
                            try factsOf.bind(2, seq)
                            guard try factsOf.step() else {
                                mismatch("the facts the reducers read for this event are missing")
                                return
                            }
                            let matches = factsOf.withBlob(0) { bytes in
                                // Facts stored by an earlier build (format 1) hold no display facts.
                                (try? EventCodec.decode(bytes, seq: seq)).map(EventCodec.encode)
                                    == EventCodec.encode(event, formatVersion: EventCodec.formatVersion(of: bytes) ?? 0)
                            }
                            factsOf.reset()
                            if !matches {
                                mismatch("the facts the reducers read do not match the signed JWS: they were altered")
                                return
                            }
                            factsChecked += 1
                        }
                    } else if eventKind != .usage {
                        everyFactChecked = false
                    }
                    expectedPrev = stored
                    expectedSeq = seq + 1
                    report.headSeq = seq
                    report.headHash = stored.map { byte in
                        let hex = String(byte, radix: 16)
                        return byte < 16 ? "0" + hex : hex
                    }.joined()
                    // Also after the first event: a caller sees the audit under way on its snapshot.
                    if report.events == 1 || report.events & 0x3FFF == 0 { progress(report.events) }
                }
                // Facts that belong to no event (inserted behind the engine's back) would count on replay.
                if everyFactChecked, (try connection.scalarInt("SELECT count(*) FROM event_facts") ?? 0) != factsChecked {
                    let stray = try connection.prepare(
                        "SELECT f.seq, f.customer_key FROM event_facts f WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = f.seq AND e.customer_key = f.customer_key) ORDER BY f.seq LIMIT 1")
                    if try stray.step() {
                        report.firstMismatch = AuditFinding(
                            seq: stray.int64(0), identity: "",
                            problem: "facts for customer \(stray.string(1) ?? "") at seq \(stray.int64(0)) belong to no event: they were inserted")
                    }
                    stray.reset()
                }
            }
            return report
        }
    }
}
