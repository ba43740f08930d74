import EntitlementCore
import EventStore
import Foundation
import SchemaMigrations
import Testing

@Suite struct EventStoreTests {
    @Test func migrationsAreAppliedInOrderAndRecorded() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let all = SchemaMigrations.migrations.map(\.identifier)
        #expect(all.starts(with: ["001_events", "002_quarantine", "003_projections", "004_projections_next"]))
        #expect(try store.appliedMigrations() == all)
        // Opening again applies nothing twice.
        let again = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try again.appliedMigrations() == all)
        #expect(try store.rawConnection.scalarString("PRAGMA journal_mode") == "wal")
        #expect(try store.rawConnection.scalarInt("PRAGMA synchronous") == 2)  // FULL: a commit is synced before it returns
    }

    /// The lookup rows a connection remembers as written are forgotten when their
    /// transaction rolls back: the next append writes them, and the customer is found.
    @Test func lookupRowsOfARolledBackBatchAreWrittenAgain() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        let rules = StoreFixtures.rules
        _ = try store.append([.verified(StoreFixtures.transaction(id: "1", original: "1000", token: "AAAA-1"))], rules: rules, rulesJSON: "{}", receivedAt: 1)
        try store.rawConnection.execute("CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;")
        let second: VerifiedInput = StoreFixtures.transaction(id: "2", original: "2000", app: "app-2", token: "BBBB-2")
        #expect(throws: StoreError.self) {
            _ = try store.append([.verified(second)], rules: rules, rulesJSON: "{}", receivedAt: 2)
        }
        #expect(try store.customers(originalTransactionId: "2000").isEmpty)
        try store.rawConnection.execute("DROP TRIGGER refuse")
        _ = try store.append([.verified(second)], rules: rules, rulesJSON: "{}", receivedAt: 3)
        #expect(try store.customers(originalTransactionId: "2000") == ["app-2"])
        #expect(try store.customers(appAccountToken: "bbbb-2") == ["app-2"])
        // Rows already known are not written twice, and the first customer is still found.
        _ = try store.append([.verified(StoreFixtures.transaction(id: "3", original: "1000", token: "AAAA-1"))], rules: rules, rulesJSON: "{}", receivedAt: 4)
        #expect(try store.customers(originalTransactionId: "1000") == ["app-1"])
        #expect(try store.customers(appAccountToken: "aaaa-1") == ["app-1"])
        #expect(try store.rawConnection.scalarInt("SELECT count(*) FROM customer_lookup") == 4)
    }

    @Test func appendIsIdempotentByIdentity() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let t1 = StoreFixtures.transaction(id: "t1")
        let first = try store.append([.verified(t1)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        guard case .appended(let id, .transaction, "app-1", 1) = first[0] else { Issue.record("\(first)"); return }
        #expect(id == "t1")
        let second = try store.append([.verified(t1), .verified(t1)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        #expect(second == [
            .duplicate(eventId: "t1", kind: .transaction, customerKey: "app-1", seq: 1),
            .duplicate(eventId: "t1", kind: .transaction, customerKey: "app-1", seq: 1),
        ])
        #expect(try store.eventCount() == 1)
        // Same notification UUID twice within one batch: appended once.
        let n = StoreFixtures.notification(uuid: "n-1", transaction: StoreFixtures.transaction(id: "t2", signed: 1_700_000_000_900))
        let third = try store.append([.verified(n), .verified(n)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 3)
        guard case .appended("n-1", .notification, "app-1", 2) = third[0], case .duplicate("n-1", .notification, "app-1", 2) = third[1]
        else { Issue.record("\(third)"); return }
        #expect(try store.eventCount() == 2)
    }

    @Test func projectionIsWrittenWithTheEventsAndRecordsRulesAndLastEvent() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "t1")), .verified(StoreFixtures.transaction(id: "t2", purchase: 1_702_592_000_000, expires: 1_705_270_400_000, signed: 1_702_592_000_500))],
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let projection = try #require(try store.projection(of: "app-1"))
        #expect(projection.rulesVersion == "test-1")
        #expect(projection.lastEventSeq == 2)
        #expect(projection.state.transactions.keys.sorted() == ["t1", "t2"])
        #expect(try store.customers(originalTransactionId: "1000") == ["app-1"])
    }

    @Test func quarantineKeepsEachRejectedInputOnce() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let rejection = Rejection(code: "MALFORMED_INPUT", message: "not JSON", raw: Array("garbage".utf8))
        let outcomes = try store.append([.rejected(rejection), .rejected(rejection)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 5)
        #expect(outcomes == [.quarantined(code: "MALFORMED_INPUT", message: "not JSON"), .quarantined(code: "MALFORMED_INPUT", message: "not JSON")])
        #expect(try store.quarantineCount() == 1)
        let row = try store.rawConnection.prepare("SELECT code, message, raw, received_at FROM quarantine")
        #expect(try row.step())
        #expect(row.string(0) == "MALFORMED_INPUT")
        #expect(row.string(1) == "not JSON")
        #expect(row.blob(2) == Array("garbage".utf8))
        #expect(row.int64(3) == 5)
    }

    @Test func theDatabaseItselfRefusesToAlterEvents() throws {
        let path = StoreFixtures.temporaryDatabase()
        do {
            let store = try EventStore(path: path, hash: StoreFixtures.hash)
            _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        // A plain connection, no engine code in the way.
        let raw = try Connection(path: path)
        for sql in ["UPDATE events SET raw = 'forged'", "DELETE FROM events", "UPDATE event_facts SET facts = x'00'", "DELETE FROM event_facts"] {
            #expect(throws: SQLiteError.self) { try raw.execute(sql) }
        }
        #expect(try raw.scalarInt("SELECT count(*) FROM events") == 1)
        #expect(try raw.scalarString("SELECT raw FROM events")?.hasPrefix("header.") == true)
    }

    @Test func theSqlite3ToolCannotAlterEvents() throws {
        let tool = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let tool else {
            Issue.record("the sqlite3 tool is not installed (apt-get install sqlite3); .ci/run installs it")
            return
        }
        let path = StoreFixtures.temporaryDatabase()
        do {
            let store = try EventStore(path: path, hash: StoreFixtures.hash)
            _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        for sql in ["UPDATE events SET raw = 'forged';", "DELETE FROM events;"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = [path, sql]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            process.waitUntilExit()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus != 0)
            #expect(message.contains("events are immutable"))
        }
        let check = try Connection(path: path)
        #expect(try check.scalarInt("SELECT count(*) FROM events") == 1)
    }

    @Test func eventsChainByHashAndAuditFindsAnEditBehindTheEnginesBack() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        _ = try store.append(
            (1...5).map { .verified(StoreFixtures.transaction(id: "t\($0)", signed: 1_700_000_000_000 + Int64($0))) },
            rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        let clean = try store.audit(verify: { _, _ in nil })
        #expect(clean.events == 5)
        #expect(clean.firstMismatch == nil)
        #expect(clean.triggersPresent)
        // Someone with the file drops the trigger and edits event 3.
        let raw = try Connection(path: path)
        try raw.execute("DROP TRIGGER events_are_immutable_update")
        try raw.execute("UPDATE events SET raw = replace(raw, 'sig-t3', 'sig-XX') WHERE seq = 3")
        let tampered = try store.audit(verify: { _, _ in nil })
        #expect(tampered.firstMismatch?.seq == 3)
        #expect(tampered.triggersPresent == false)
    }

    /// New databases get 16 KB pages (replay reads facts and projections that lie
    /// between the log's rows: bigger pages, fewer reads); a database made with
    /// SQLite's default 4 KB pages keeps them and works as before.
    @Test func newDatabasesUse16KBPagesAndOlderOnesKeepTheirs() throws {
        let fresh = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try fresh.rawConnection.scalarInt("PRAGMA page_size") == 16_384)

        let tool = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let tool else {
            Issue.record("the sqlite3 tool is not installed (apt-get install sqlite3); .ci/run installs it")
            return
        }
        let path = StoreFixtures.temporaryDatabase()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = [path, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE scratch (x); DROP TABLE scratch;"]
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let store = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try store.rawConnection.scalarInt("PRAGMA page_size") == 4_096)
        for i in 1...6 {
            let input = StoreFixtures.transaction(id: "t\(i)", original: "o\(i % 2)", app: "app-\(i % 2)", signed: 1_700_000_000_000 + Int64(i))
            _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: 1_701_000_000_000, collectDiff: false)
        #expect(report.events == 6)
        #expect(report.customers == 2)
        #expect(report.changed == 0)
        let reopened = try EventStore(path: path, hash: StoreFixtures.hash)
        #expect(try reopened.rawConnection.scalarInt("PRAGMA page_size") == 4_096)
    }

    @Test func replayRebuildsTheSameStateAndCountsNothingChangedUnderTheSameRules() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let inputs: [VerifiedInput] = (1...20).map { i in
            StoreFixtures.transaction(id: "t\(i)", original: "o\(i % 4)", app: "app-\(i % 4)", signed: 1_700_000_000_000 + Int64(i))
        }
        for input in inputs { _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{\"v\":1}", receivedAt: 1) }
        let before = try (0..<4).map { try store.projection(of: "app-\($0)")!.state }
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{\"v\":1}", now: 1_701_000_000_000, collectDiff: true)
        #expect(report.events == 20)
        #expect(report.customers == 4)
        #expect(report.changed == 0)
        #expect(report.diffs.isEmpty)
        let after = try (0..<4).map { try store.projection(of: "app-\($0)")!.state }
        #expect(before == after)
        #expect(try store.engineState().generation == 2)
    }

    @Test func replayUnderNewRulesReportsChangedCustomers() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let oldRules = StoreFixtures.rules
        let oldJSON = JSONWriter.string(oldRules.canonicalJSON)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "t1"))], rules: oldRules, rulesJSON: oldJSON, receivedAt: 1)
        _ = try store.append(
            [.verified(StoreFixtures.transaction(id: "x1", original: "2000", app: "app-2", product: "other"))], rules: oldRules,
            rulesJSON: oldJSON, receivedAt: 1)
        var newRules = oldRules
        newRules.version = "test-2"
        newRules.products["pro.monthly"] = ProductRule(entitlements: ["pro", "extra"])
        let report = try store.replay(
            rules: newRules, rulesJSON: JSONWriter.string(newRules.canonicalJSON), now: 1_701_000_000_000, collectDiff: true)
        #expect(report.changed == 1)
        #expect(report.diffs == [ReplayDiff(customerKey: "app-1", before: ["pro"], after: ["extra", "pro"])])
        #expect(try store.engineState().rulesVersion == "test-2")
        #expect(try store.projection(of: "app-1")?.rulesVersion == "test-2")
    }
}

/// The hash chain's two versions (Migrations/sql/013_chain_digest.sql), written out here
/// from the documentation: a database written before migration 013 keeps its version-1
/// hashes, and the chain continues in version 2 where `engine_state.chain_digest_from` says.
@Suite struct ChainVersionTests {
    static func documented(prev: [UInt8], seq: Int64, identity: String, raw: String, version2: Bool) -> [UInt8] {
        var material = prev
        withUnsafeBytes(of: seq.bigEndian) { material.append(contentsOf: $0) }
        material.append(contentsOf: identity.utf8)
        if version2 {
            material.append(1)
            material.append(contentsOf: StoreFixtures.hash(Array(raw.utf8)))
        } else {
            material.append(0)
            material.append(contentsOf: raw.utf8)
        }
        return StoreFixtures.hash(material)
    }

    static func rows(_ store: EventStore) throws -> [(seq: Int64, identity: String, prev: [UInt8], hash: [UInt8])] {
        let statement = try store.rawConnection.prepare("SELECT seq, identity, prev_hash, hash FROM events ORDER BY seq")
        var rows: [(Int64, String, [UInt8], [UInt8])] = []
        while try statement.step() { rows.append((statement.int64(0), statement.string(1) ?? "", statement.blob(2) ?? [], statement.blob(3) ?? [])) }
        return rows
    }

    @Test func versionOneThenVersionTwoWhereTheDatabaseSays() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        #expect(try store.rawConnection.scalarInt("SELECT chain_digest_from FROM engine_state") == 1)
        // As a database written before migration 013: every event in version 1.
        try store.rawConnection.execute("UPDATE engine_state SET chain_digest_from = 1000")
        for id in 1...3 {
            _ = try store.append([.verified(StoreFixtures.transaction(id: "\(id)"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        }
        // Migration 013 on it: version 2 from the next seq on.
        try store.rawConnection.execute("UPDATE engine_state SET chain_digest_from = (SELECT max(seq) + 1 FROM events)")
        var withDigest = StoreFixtures.transaction(id: "5")
        if case .transaction(var signed) = withDigest {
            signed.signedBytes = SignedBytes(nil, jwsDigest: StoreFixtures.hash(Array(signed.jws.utf8)))
            withDigest = .transaction(signed)
        }
        _ = try store.append([.verified(StoreFixtures.transaction(id: "4")), .verified(withDigest)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "6"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 3)

        var prev = [UInt8](repeating: 0, count: 32)
        let rows = try Self.rows(store)
        #expect(rows.map(\.seq) == [1, 2, 3, 4, 5, 6])
        for row in rows {
            #expect(row.prev == prev)
            let raw = try store.loggedInput(at: row.seq)
            #expect(row.hash == Self.documented(prev: prev, seq: row.seq, identity: row.identity, raw: raw, version2: row.seq >= 4), "seq \(row.seq)")
            prev = row.hash
        }
        let report = try store.audit(verify: { _, _ in nil })
        #expect(report.firstMismatch == nil && report.events == 6)
    }

    /// The store takes the verifier's digest as given: a wrong one makes a hash that
    /// audit, which digests the logged JWS itself, names as altered.
    @Test func aDigestThatIsNotTheInputsIsCaughtByAudit() throws {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        _ = try store.append([.verified(StoreFixtures.transaction(id: "1"))], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 1)
        var wrong = StoreFixtures.transaction(id: "2")
        if case .transaction(var signed) = wrong {
            signed.signedBytes = SignedBytes(nil, jwsDigest: [UInt8](repeating: 7, count: 32))
            wrong = .transaction(signed)
        }
        _ = try store.append([.verified(wrong)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: 2)
        let report = try store.audit(verify: { _, _ in nil })
        #expect(report.firstMismatch?.seq == 2)
        #expect(report.firstMismatch?.problem.contains("altered") == true)
    }
}
