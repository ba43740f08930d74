import EntitlementCore
import Foundation
import SchemaMigrations
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension EventStore {
    /// Recomputes the hash chain over the whole log and, through `verify`,
    /// re-checks every stored JWS. Stops at the first event that does not match.
    ///
    /// - Parameter verify: given the event's kind and raw JWS, returns `nil`
    ///   when it verifies, else what is wrong.
    public func audit(
        verify: (SignedKind, String) -> String?, expectedHead: LogHead? = nil, progress: (Int64) -> Void = { _ in }
    ) throws(StoreError) -> AuditReport {
        try audit(reverify: { kind, raw in (verify(kind, raw), nil) }, expectedHead: expectedHead, progress: progress)
    }

    /// Recomputes the hash chain over the whole log and, through `reverify`,
    /// re-checks every stored JWS; where `reverify` also returns the verified
    /// input, checks that the facts the reducers read (`event_facts`) and the
    /// event's customer are exactly what that signed input says, and that no
    /// facts belong to no event: the reducers' input is covered, not only the log.
    /// Stops at the first event that does not match. The log must also reach
    /// the head recorded beside the database at the last commit and `expectedHead`
    /// (each a sequence number and the hash there): a log that ends before either,
    /// or holds another event there, lost or rewrote its newest events.
    ///
    /// - Parameters:
    ///   - reverify: given the event's kind and raw JWS, returns what is
    ///     wrong (`nil` when it verifies) and, when it verifies, the verified input.
    ///   - expectedHead: a head an operator recorded earlier (`audit` prints it).
    public func audit(
        reverify: (SignedKind, String) -> (problem: String?, input: VerifiedInput?), expectedHead: LogHead? = nil,
        progress: (Int64) -> Void = { _ in }
    ) throws(StoreError) -> AuditReport {
        try audit(reverifyBatch: { $0.map(reverify) }, batchSize: 1, expectedHead: expectedHead, progress: progress)
    }

    /// The same, with the stored JWS of up to `batchSize` events at a time handed to
    /// `reverifyBatch` at once (which may check them side by side, on several cores);
    /// everything else (the chain, the facts, the heads) is checked one event after
    /// another, in the log's order, and the first mismatch found is the same.
    ///
    /// - Parameters:
    ///   - reverifyBatch: given each event's kind and raw JWS, returns, in the same
    ///     order, what is wrong with each (`nil` when it verifies) and, when it
    ///     verifies, the verified input.
    ///   - batchSize: how many events' JWS are handed over at once.
    public func audit(
        reverifyBatch: ([(SignedKind, String)]) -> [(problem: String?, input: VerifiedInput?)], batchSize: Int,
        expectedHead: LogHead? = nil, progress: (Int64) -> Void = { _ in }
    ) throws(StoreError) -> AuditReport {
        try mapped {
            try requireLogInParts()
            var report = AuditReport(events: 0, firstMismatch: nil, triggersPresent: false)
            report.triggerProblems = try immutabilityTriggerProblems()
            report.triggersPresent = report.triggerProblems.isEmpty
            report.recordedHead = recordedHead()
            var heads: [(LogHead, String)] = []
            if let recorded = report.recordedHead { heads.append((recorded, "the head record \(headRecordPath) (written at each commit)")) }
            if let expectedHead { heads.append((expectedHead, "the expected head")) }
            try connection.read {
                let scan = try connection.prepare(
                    """
                    SELECT seq, identity, kind, prev_hash, hash, customer_key, header_id, body, signature, raw, event_id,
                        app_transaction_id, original_transaction_id, transaction_id, notification_type, subtype, signed_date
                    FROM events ORDER BY seq
                    """)
                let factsOf = try connection.prepare("SELECT facts FROM event_facts WHERE customer_key = ? AND seq = ?")
                var expectedPrev = [UInt8](repeating: 0, count: 32)
                var material: [UInt8] = []
                let digestFrom = try chainDigestFrom()
                var expectedSeq: Int64 = 1
                var factsChecked: Int64 = 0
                var everyFactChecked = true
                var pending: [Row] = []
                var verified: [(problem: String?, input: VerifiedInput?)?] = []
                var next = 0
                var scanned = false
                while true {
                    if next == pending.count {
                        // The next batch: read in order, its signed JWS re-checked at once.
                        pending.removeAll(keepingCapacity: true)
                        next = 0
                        while !scanned && pending.count < max(1, batchSize) {
                            // Stepped again after its end, a statement starts over.
                            guard try scan.step() else {
                                scanned = true
                                break
                            }
                            let seq = scan.int64(0)
                            let kind = scan.string(2) ?? ""
                            let raw: Result<String, StoreError>
                            do {
                                raw = .success(try loggedInput(seq: seq, kind: kind, scan, column: 6))
                            } catch let error as StoreError {
                                raw = .failure(error)
                            }
                            pending.append(Row(
                                seq: seq, identity: scan.string(1) ?? "", kind: kind, prev: scan.blob(3) ?? [],
                                stored: scan.blob(4) ?? [], storedKey: scan.string(5), raw: raw, filing: LogFiling(scan, column: 10)))
                        }
                        if pending.isEmpty { break }
                        var signed: [(index: Int, kind: SignedKind, raw: String)] = []
                        for (index, row) in pending.enumerated() {
                            if case .success(let raw) = row.raw, case .signed(let kind)? = EventKind(rawValue: row.kind) {
                                signed.append((index, kind, raw))
                            }
                        }
                        let answers = signed.isEmpty ? [] : reverifyBatch(signed.map { ($0.kind, $0.raw) })
                        verified = Array(repeating: nil, count: pending.count)
                        for (item, answer) in zip(signed, answers) { verified[item.index] = answer }
                    }
                    let row = pending[next]
                    let answer = verified[next]
                    next += 1
                    let (seq, identity, kind, prev, stored, storedKey) = (row.seq, row.identity, row.kind, row.prev, row.stored, row.storedKey)
                    report.events += 1
                    func mismatch(_ problem: String) { report.firstMismatch = AuditFinding(seq: seq, identity: identity, problem: problem) }
                    // The input as received: whole, or given back from its parts.
                    let raw: String
                    switch row.raw {
                    case .success(let text): raw = text
                    case .failure(let error):
                        mismatch("the stored JWS cannot be read back: \(error.message)")
                        return
                    }
                    if seq != expectedSeq {
                        mismatch("sequence jumps from \(expectedSeq - 1) to \(seq): events were removed")
                        return
                    }
                    if prev != expectedPrev {
                        mismatch("prev_hash does not match the previous event's hash: the chain was broken before this event")
                        return
                    }
                    let recomputed = chainHash(
                        prevHash: prev, seq: seq, identity: identity, raw: raw, digest: nil, digestFrom: digestFrom, material: &material)
                    if recomputed != stored {
                        mismatch("hash does not match the stored JWS: the event was altered")
                        return
                    }
                    guard let eventKind = EventKind(rawValue: kind) else {
                        mismatch("unknown kind \(kind)")
                        return
                    }
                    if case .operatorRecord(.usage) = eventKind {
                        // The operator's word: no signature, but the facts must be what the logged record says.
                        if let problem = try usageProblem(seq: seq, raw: raw, storedKey: storedKey, factsOf: factsOf) {
                            mismatch(problem)
                            return
                        }
                        factsChecked += 1
                    } else if case .operatorRecord(let operatorKind) = eventKind {
                        // An operator's action: no signature, but the facts must be what the logged record says.
                        if let problem = try operatorRecordProblem(
                            seq: seq, kind: operatorKind, raw: raw, storedKey: storedKey, factsOf: factsOf)
                        {
                            mismatch(problem)
                            return
                        }
                        factsChecked += 1
                    }
                    let (problem, input): (String?, VerifiedInput?)
                    switch eventKind {
                    case .signed: (problem, input) = answer ?? ("it was not re-verified", nil)
                    case .operatorRecord: (problem, input) = (nil, nil)
                    }
                    if let problem {
                        mismatch("stored JWS no longer verifies: \(problem)")
                        return
                    }
                    if var input {
                        // A receipt is logged as one event per original transaction id: the one this event holds.
                        if case .receipt(let part) = input, let stored = storedKey, stored.hasPrefix("otid:"),
                            let match = part.receipt.parts.first(where: { $0.originalTransactionId == String(stored.dropFirst(5)) })
                        {
                            input = .receipt(match)
                        }
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
                        // The columns look-ups read must be what was signed too.
                        if let column = row.filing.firstDifference(
                            from: LogFiling(event: event, input: input, eventId: EventIdentity.eventId(of: input)))
                        {
                            mismatch("the event's \(column) is not what the signed data says: it was altered")
                            return
                        }
                    } else if case .signed = eventKind {
                        everyFactChecked = false
                    }
                    for (head, source) in heads where head.seq == seq && head.hash != Self.hex(stored) {
                        mismatch("the event at seq \(seq) is not the one \(source) names (hash \(head.hash)): the log was rewritten from here")
                        return
                    }
                    expectedPrev = stored
                    expectedSeq = seq + 1
                    report.headSeq = seq
                    report.headHash = Self.hex(stored)
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
                // The newest events gone: the chain that is left is valid, but shorter than a head
                // that was committed (deleted, or a database restored from a replica that never
                // received them). Checked last, so that `missingEvents` says the rest checks out.
                guard report.firstMismatch == nil, let top = heads.max(by: { $0.0.seq < $1.0.seq }), top.0.seq > report.headSeq else { return }
                let (head, source) = top
                report.missingEvents = head.seq - report.headSeq
                report.firstMismatch = AuditFinding(
                    seq: report.headSeq + 1, identity: "",
                    problem: "the log ends at seq \(report.headSeq), but \(source) says seq \(head.seq) (hash \(head.hash)) was committed: the newest events were deleted, or this database was restored from a replica that never received them (\(report.missingEvents) events missing)")
            }
            return report
        }
    }
}

extension EventStore {
    /// One event as the audit reads it, before it checks it.
    private struct Row {
        var seq: Int64
        var identity: String
        var kind: String
        var prev: [UInt8]
        var stored: [UInt8]
        var storedKey: String?
        /// The input as received, or why it cannot be read back.
        var raw: Result<String, StoreError>
        /// The columns that file it.
        var filing: LogFiling
    }
}

extension EventStore {
    /// The triggers that make the log immutable, as the schema defines them: every
    /// `CREATE TRIGGER` in the migrations whose name says `immutable`, less those a
    /// later migration drops (`DROP TRIGGER`, with the table it guarded).
    static let immutabilityTriggers: [(name: String, sql: String)] = {
        guard let migrations = try? SchemaMigrations.all() else { return [] }
        var triggers: [(name: String, sql: String)] = []
        for migration in migrations {
            var dropped = Substring(migration.sql)
            while let start = dropped.range(of: "DROP TRIGGER ") {
                let name = dropped[start.upperBound...].prefix { !$0.isWhitespace && $0 != ";" }
                triggers.removeAll { $0.name == name }
                dropped = dropped[start.upperBound...]
            }
            var rest = Substring(migration.sql)
            while let start = rest.range(of: "CREATE TRIGGER") {
                guard let end = rest[start.upperBound...].range(of: "END;") else { break }
                let statement = rest[start.lowerBound..<end.lowerBound] + "END"
                let name = statement.dropFirst("CREATE TRIGGER".count).split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
                if name.contains("immutable") { triggers.append((name, String(statement))) }
                rest = rest[end.upperBound...]
            }
        }
        return triggers
    }()

    /// SQL with every run of whitespace made one space, for comparing what SQLite stored with the schema.
    static func normalizedSQL(_ sql: String) -> String {
        let joined = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return joined.hasSuffix(";") ? String(joined.dropLast()) : joined
    }

    /// What is wrong with the immutability triggers: each must exist with exactly
    /// the SQL the schema gives it. A trigger of the same name that does something
    /// else (nothing, say) would let `DELETE FROM events` through.
    func immutabilityTriggerProblems() throws -> [String] {
        let stored = try connection.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
        var byName: [String: String] = [:]
        while try stored.step() { byName[stored.string(0) ?? ""] = stored.string(2) ?? "" }
        var problems: [String] = []
        for (name, sql) in Self.immutabilityTriggers {
            guard let found = byName[name] else {
                problems.append("trigger \(name) is missing: the table it guards can be changed")
                continue
            }
            if Self.normalizedSQL(found) != Self.normalizedSQL(sql) {
                problems.append("trigger \(name) is not the schema's (its SQL is `\(Self.normalizedSQL(found).prefix(200))`): it may not refuse the change it is named for")
            }
        }
        return problems
    }
}
