import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// The database file edited behind the engine's back: `entitlements audit` exits 1 and
    /// names the first event that does not match.
    @Suite("Tamper evidence")
    struct TamperEvidence {
        /// A workspace with a database of genuine events, audited clean.
        final class Fixture {
            let workspace: Workspace
            let history: History
            let events: Int64
            init() throws {
                workspace = try Workspace(name: "tamper")
                history = History.generate(lines: 80, seed: 0x7A3)
                let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
                try workspace.cli("ingest", db: "genuine.sqlite", [file.path])
                events = try Probe(workspace.path("genuine.sqlite")).eventCount()
            }

            /// A copy of the genuine database, edited by `edit` with plain SQL.
            func tampered(_ name: String, _ edit: (Probe) throws -> Void) throws -> String {
                let path = try workspace.copyDatabase(workspace.path("genuine.sqlite"), to: "\(name).sqlite")
                try edit(try Probe(path))
                return "\(name).sqlite"
            }

            /// `entitlements audit` on a database: its exit code and report.
            func audit(_ database: String) throws -> (Int32, JSONValue?) {
                let outcome = try workspace.cli("audit", db: database)
                return (outcome.status, try? JSONParser().parse(outcome.stdout))
            }
        }

        static func int(_ value: JSONValue?) -> Int64? { if case .int(let n)? = value { return n } else { return nil } }

        /// The chain hash the engine stores, written from its documentation
        /// (Migrations/sql/013_chain_digest.sql): an attacker who knows it can re-chain.
        /// Version 1 below `digestFrom`, version 2 from it on (1 in a database made since).
        static func chainHash(prev: [UInt8], seq: Int64, identity: String, raw: String, digestFrom: Int64 = 1) -> [UInt8] {
            var material = prev
            withUnsafeBytes(of: seq.bigEndian) { material.append(contentsOf: $0) }
            material.append(contentsOf: identity.utf8)
            if seq >= digestFrom {
                material.append(1)
                material.append(contentsOf: SHA256.hash(Array(raw.utf8)))
            } else {
                material.append(0)
                material.append(contentsOf: raw.utf8)
            }
            return SHA256.hash(material)
        }

        /// Where the database's chain switches to version 2 (`Int64.max` before migration 013).
        static func digestFrom(_ probe: Probe) throws -> Int64 {
            let statement = try probe.connection.prepare(
                "SELECT coalesce((SELECT chain_digest_from FROM engine_state WHERE id = 1), 9223372036854775807)")
            return try statement.step() ? statement.int64(0) : Int64.max
        }

        /// Every stored hash, recomputed from the documentation and the logged inputs.
        static func expectDocumentedChain(_ probe: Probe) throws {
            let digestFrom = try digestFrom(probe)
            let rows = try probe.connection.prepare("SELECT seq, identity, prev_hash, hash FROM events ORDER BY seq")
            var prev = [UInt8](repeating: 0, count: 32)
            var checked = 0
            while try rows.step() {
                let seq = rows.int64(0)
                #expect(rows.blob(2) == prev, "seq \(seq): prev_hash")
                let expected = chainHash(prev: prev, seq: seq, identity: rows.string(1) ?? "", raw: try probe.loggedInput(seq), digestFrom: digestFrom)
                #expect(rows.blob(3) == expected, "seq \(seq): hash")
                prev = rows.blob(3) ?? []
                checked += 1
            }
            #expect(checked > 0)
        }

        @Test("every stored hash is the documented chain's (version 2 from the first event of a new database)")
        func storedHashesFollowTheDocumentedChain() throws {
            let fixture = try Fixture()
            let probe = try Probe(fixture.workspace.path("genuine.sqlite"))
            #expect(try Self.digestFrom(probe) == 1)
            try Self.expectDocumentedChain(probe)
        }

        @Test("the chain's version edited (engine_state.chain_digest_from): audit names the first event it no longer matches")
        func editedChainVersionIsNamed() throws {
            let fixture = try Fixture()
            let database = try fixture.tampered("version") { probe in
                try probe.execute("UPDATE engine_state SET chain_digest_from = 5 WHERE id = 1")
            }
            try expectFlagged(fixture, database, seq: 1, problem: "altered")
        }

        /// Recomputes every hash from `seq` on, as an attacker covering their tracks would.
        static func rechain(_ probe: Probe, from seq: Int64) throws {
            let rows = try probe.connection.prepare("SELECT seq, identity FROM events WHERE seq >= ? ORDER BY seq")
            try rows.bind(1, seq)
            var prev: [UInt8] = try {
                let statement = try probe.connection.prepare("SELECT hash FROM events WHERE seq = ?")
                try statement.bind(1, seq - 1)
                return try statement.step() ? (statement.blob(0) ?? []) : [UInt8](repeating: 0, count: 32)
            }()
            var updates: [(Int64, [UInt8], [UInt8])] = []
            while try rows.step() {
                let hash = chainHash(prev: prev, seq: rows.int64(0), identity: rows.string(1) ?? "", raw: try probe.loggedInput(rows.int64(0)))
                updates.append((rows.int64(0), prev, hash))
                prev = hash
            }
            for (seq, prev, hash) in updates {
                let update = try probe.connection.prepare("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?")
                try update.bind(1, blob: prev)
                try update.bind(2, blob: hash)
                try update.bind(3, seq)
                try update.step()
            }
        }

        static let dropTriggers = "DROP TRIGGER events_are_immutable_update; DROP TRIGGER events_are_immutable_delete;"
        static let restoreTriggers = """
            CREATE TRIGGER events_are_immutable_update BEFORE UPDATE ON events
            BEGIN SELECT RAISE(ABORT, 'events are immutable: UPDATE is not allowed'); END;
            CREATE TRIGGER events_are_immutable_delete BEFORE DELETE ON events
            BEGIN SELECT RAISE(ABORT, 'events are immutable: DELETE is not allowed'); END;
            """

        /// A forged JWS: a genuine one whose payload now sells a lifetime purchase.
        static func forged(from raw: String) -> String {
            let parts = raw.split(separator: ".").map(String.init)
            let payload = Base64Encoding.url(Array(JSONWriter.string(TestPayloads.transaction(
                transactionId: "6660000000000001", productId: "com.example.lifetime", type: "Non-Consumable", expiresDate: nil)).utf8))
            return parts[0] + "." + payload + "." + parts[2]
        }

        static func raw(_ probe: Probe, _ seq: Int64) throws -> String {
            try probe.loggedInput(seq)
        }

        func expectFlagged(_ fixture: Fixture, _ database: String, seq: Int64, problem: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let (status, report) = try fixture.audit(database)
            #expect(status == 1, "audit of \(database) exited \(status)", sourceLocation: sourceLocation)
            #expect(report?["ok"] == .bool(false), sourceLocation: sourceLocation)
            #expect(Self.int(report?["firstMismatch"]?["seq"]) == seq,
                    "\(database): expected seq \(seq), report \(report.map { JSONWriter.string($0) } ?? "none")", sourceLocation: sourceLocation)
            #expect(text(report?["firstMismatch"]?["problem"])?.contains(problem) == true,
                    "\(database): \(report.map { JSONWriter.string($0) } ?? "none")", sourceLocation: sourceLocation)
        }

        @Test("the genuine log audits clean")
        func genuineLogAuditsClean() throws {
            let fixture = try Fixture()
            let (status, report) = try fixture.audit("genuine.sqlite")
            #expect(status == 0)
            #expect(report?["ok"] == .bool(true) && report?["triggersPresent"] == .bool(true))
            #expect(Self.int(report?["events"]) == fixture.events)
            // With --progress, the last line on standard error is the whole count.
            let shown = try fixture.workspace.cli("audit", db: "genuine.sqlite", ["--progress"])
            #expect(shown.status == 0)
            #expect(shown.stderr.contains("\raudited \(fixture.events)/\(fixture.events) events (100%)"), "\(shown.stderr)")
        }

        @Test("triggers dropped, one raw JWS edited, triggers restored: audit names that event")
        func editedRawIsNamed() throws {
            let fixture = try Fixture()
            let seq = fixture.events / 2
            let database = try fixture.tampered("edited-raw") { probe in
                let forged = Self.forged(from: try Self.raw(probe, seq))
                try probe.execute(Self.dropTriggers)
                let update = try probe.connection.prepare("UPDATE events SET raw = ? WHERE seq = ?")
                try update.bind(1, forged)
                try update.bind(2, seq)
                try update.step()
                try probe.execute(Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq, problem: "altered")
        }

        @Test("a look-up column edited (transaction id, signed date, ...): audit names the event and the column", arguments: [
            ("transaction_id", "'999'"), ("original_transaction_id", "'999'"), ("app_transaction_id", "'999'"),
            ("event_id", "'999'"), ("signed_date", "signed_date + 1"),
        ])
        func editedFilingColumnIsNamed(column: String, value: String) throws {
            let fixture = try Fixture()
            let seq = fixture.events / 2
            let database = try fixture.tampered("edited-\(column)") { probe in
                try probe.execute(Self.dropTriggers + "UPDATE events SET \(column) = \(value) WHERE seq = \(seq);" + Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq, problem: "the event's \(column) is not what the signed data says")
        }

        @Test("an event row deleted from the middle: audit names the event after the gap")
        func deletedRowIsNamed() throws {
            let fixture = try Fixture()
            let seq = fixture.events / 3
            let database = try fixture.tampered("deleted-row") { probe in
                try probe.execute(Self.dropTriggers + "DELETE FROM events WHERE seq = \(seq);" + Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq + 1, problem: "removed")
        }

        @Test("a stored hash edited: audit names that event")
        func editedHashIsNamed() throws {
            let fixture = try Fixture()
            let seq = fixture.events - 5
            let database = try fixture.tampered("edited-hash") { probe in
                try probe.execute(Self.dropTriggers + "UPDATE events SET hash = zeroblob(32) WHERE seq = \(seq);" + Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq, problem: "hash")
        }

        @Test("a prev_hash edited: audit names that event")
        func editedPrevHashIsNamed() throws {
            let fixture = try Fixture()
            let seq: Int64 = 2
            let database = try fixture.tampered("edited-prev-hash") { probe in
                try probe.execute(Self.dropTriggers + "UPDATE events SET prev_hash = randomblob(32) WHERE seq = \(seq);" + Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq, problem: "prev_hash")
        }

        @Test("the first event edited: audit names seq 1")
        func editedFirstEventIsNamed() throws {
            let fixture = try Fixture()
            let database = try fixture.tampered("edited-first") { probe in
                try probe.execute(Self.dropTriggers + "UPDATE events SET identity = identity || 'x' WHERE seq = 1;" + Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: 1, problem: "altered")
        }

        @Test("two genuine events swapped: audit names the first of them")
        func swappedEventsAreNamed() throws {
            let fixture = try Fixture()
            let (a, b) = (fixture.events / 4, fixture.events / 4 + 3)
            let database = try fixture.tampered("swapped") { probe in
                let (rawA, rawB) = (try Self.raw(probe, a), try Self.raw(probe, b))
                try probe.execute(Self.dropTriggers)
                for (seq, raw) in [(a, rawB), (b, rawA)] {
                    let update = try probe.connection.prepare("UPDATE events SET raw = ? WHERE seq = ?")
                    try update.bind(1, raw)
                    try update.bind(2, seq)
                    try update.step()
                }
                try probe.execute(Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: a, problem: "altered")
        }

        @Test("a forged JWS with the whole chain recomputed after it: the signature check names it")
        func rechainedForgeryIsNamed() throws {
            let fixture = try Fixture()
            let seq = fixture.events / 2 + 1
            let database = try fixture.tampered("rechained") { probe in
                let forged = Self.forged(from: try Self.raw(probe, seq))
                try probe.execute(Self.dropTriggers)
                let update = try probe.connection.prepare("UPDATE events SET raw = ? WHERE seq = ?")
                try update.bind(1, forged)
                try update.bind(2, seq)
                try update.step()
                try Self.rechain(probe, from: seq)
                try probe.execute(Self.restoreTriggers)
            }
            try expectFlagged(fixture, database, seq: seq, problem: "no longer verifies")
        }

        @Test("a forged event appended with a valid chain hash (INSERT needs no trigger dropped): audit names it")
        func appendedForgeryIsNamed() throws {
            let fixture = try Fixture()
            let seq = fixture.events + 1
            let database = try fixture.tampered("appended") { probe in
                let forged = Self.forged(from: try Self.raw(probe, 1))
                let last = try probe.connection.prepare("SELECT hash FROM events WHERE seq = ?")
                try last.bind(1, seq - 1)
                _ = try last.step()
                let prev = last.blob(0) ?? []
                last.reset()
                let identity = "transaction:6660000000000001:\(TestPayloads.january2025)"
                let insert = try probe.connection.prepare("""
                    INSERT INTO events (seq, identity, kind, event_id, customer_key, app_transaction_id, original_transaction_id,
                        transaction_id, signed_date, received_at, raw, prev_hash, hash)
                    VALUES (?, ?, 'transaction', '6660000000000001', '704000000000000001', '704000000000000001', '6660000000000001',
                        '6660000000000001', \(TestPayloads.january2025), 0, ?, ?, ?)
                    """)
                try insert.bind(1, seq)
                try insert.bind(2, identity)
                try insert.bind(3, forged)
                try insert.bind(4, blob: prev)
                try insert.bind(5, blob: Self.chainHash(prev: prev, seq: seq, identity: identity, raw: forged))
                try insert.step()
            }
            try expectFlagged(fixture, database, seq: seq, problem: "no longer verifies")
        }

        @Test("the immutability triggers dropped: audit fails (ok false, triggersPresent false)")
        func droppedTriggersFailTheAudit() throws {
            let fixture = try Fixture()
            let database = try fixture.tampered("no-triggers") { probe in try probe.execute(Self.dropTriggers) }
            let (status, report) = try fixture.audit(database)
            #expect(status == 1)
            #expect(report?["ok"] == .bool(false) && report?["triggersPresent"] == .bool(false))
        }

        @Test("the immutability triggers replaced by same-named triggers that do nothing: audit fails and names them")
        func noOpTriggersFailTheAudit() throws {
            let fixture = try Fixture()
            let database = try fixture.tampered("no-op-triggers") { probe in
                try probe.execute("""
                    DROP TRIGGER events_are_immutable_delete;
                    CREATE TRIGGER events_are_immutable_delete BEFORE DELETE ON events BEGIN SELECT 1; END;
                    DROP TRIGGER event_facts_are_immutable_update;
                    CREATE TRIGGER event_facts_are_immutable_update BEFORE UPDATE ON event_facts BEGIN SELECT 1; END;
                    """)
            }
            let (status, report) = try fixture.audit(database)
            #expect(status == 1, "audit exit \(status)")
            #expect(report?["ok"] == .bool(false) && report?["triggersPresent"] == .bool(false), "\(report.map { JSONWriter.string($0) } ?? "none")")
            let problems = report?["triggerProblems"].map { JSONWriter.string($0) } ?? ""
            #expect(problems.contains("events_are_immutable_delete") && problems.contains("event_facts_are_immutable_update"), "\(problems)")
            // Why it matters: under those triggers the log can be deleted (and the genuine ones still refuse).
            let probe = try Probe(fixture.workspace.path(database))
            try probe.execute("DELETE FROM events WHERE seq = \(fixture.events)")
            #expect(try probe.eventCount() == fixture.events - 1, "the no-op trigger refused the DELETE (test is void)")
            #expect(throws: (any Error).self) { try Probe(fixture.workspace.path("genuine.sqlite")).execute("DELETE FROM events WHERE seq = 1") }
        }

        /// Deletes the newest events and their facts, restoring the exact triggers afterwards,
        /// as someone covering their tracks would: the chain that is left is valid.
        static func truncateTail(_ probe: Probe, keeping seq: Int64) throws {
            try probe.execute(
                "DROP TRIGGER events_are_immutable_delete; DROP TRIGGER event_facts_are_immutable_delete;"
                    + "DELETE FROM event_facts WHERE seq > \(seq); DELETE FROM events WHERE seq > \(seq);"
                    + """
                    CREATE TRIGGER events_are_immutable_delete BEFORE DELETE ON events
                    BEGIN SELECT RAISE(ABORT, 'events are immutable: DELETE is not allowed'); END;
                    CREATE TRIGGER event_facts_are_immutable_delete BEFORE DELETE ON event_facts
                    BEGIN SELECT RAISE(ABORT, 'event facts are immutable: DELETE is not allowed'); END;
                    """)
        }

        @Test("the newest events and their facts deleted by hand: audit compares the head record (or --expect-head); replay counts and shows the customers that lost them")
        func truncatedTailIsDetected() throws {
            let fixture = try Fixture()
            let workspace = fixture.workspace
            let genuine = workspace.path("genuine.sqlite")
            let clean = try fixture.audit("genuine.sqlite")
            let head = "\(Self.int(clean.1?["headSeq"]) ?? -1):\(text(clean.1?["headHash"]) ?? "")"
            #expect(clean.1?["recordedHead"]?["seq"] == clean.1?["headSeq"], "ingest records the head beside the database")
            // Cut the log back to before the last customers' first events, so that some customers vanish whole.
            let keep = try Probe(genuine).int("SELECT min(seq) FROM (SELECT customer_key, min(seq) AS seq FROM event_facts GROUP BY customer_key ORDER BY seq DESC LIMIT 3)") - 1
            let lost = Set(try Probe(genuine).strings("SELECT DISTINCT customer_key FROM event_facts WHERE seq > \(keep)"))
            let vanished = try Probe(genuine).strings(
                "SELECT DISTINCT customer_key FROM event_facts WHERE seq > \(keep) AND customer_key NOT IN (SELECT customer_key FROM event_facts WHERE seq <= \(keep))")
            #expect(!vanished.isEmpty && keep > 0)
            let database = try fixture.tampered("truncated") { probe in try Self.truncateTail(probe, keeping: keep) }
            try FileManager.default.copyItem(atPath: genuine + "-head", toPath: workspace.path(database) + "-head")
            try expectFlagged(fixture, database, seq: keep + 1, problem: "newest events were deleted")
            // Without the record beside it (a copy), the head an operator pinned does the same.
            try FileManager.default.removeItem(atPath: workspace.path(database) + "-head")
            let unpinned = try fixture.audit(database)
            #expect(unpinned.0 == 0, "without a record or a pin, the shorter chain is valid")
            let pinned = try workspace.cli("audit", db: database, ["--expect-head", head])
            #expect(pinned.status == 1 && pinned.stdout.contains("newest events were deleted"), "\(pinned.stdout) \(pinned.stderr)")
            let wrongPin = try workspace.cli("audit", db: "genuine.sqlite", ["--expect-head", "3:" + String(repeating: "0", count: 64)])
            #expect(wrongPin.status == 1 && wrongPin.stdout.contains("rewritten"), "\(wrongPin.stdout)")
            #expect(try workspace.cli("audit", db: "genuine.sqlite", ["--expect-head", head]).status == 0)
            #expect(try workspace.cli("audit", db: "genuine.sqlite", ["--expect-head", "12"]).status == 2)

            // Replay: the customers that lost events are changed, the vanished ones shown in the diff.
            let replay = try workspace.cli("replay", db: database, ["--quiet", "--diff"])
            let report = try? JSONParser().parse(replay.stdout)
            #expect(replay.status == 0, "\(replay.stderr)")
            #expect(Self.int(report?["changed"]) == Int64(lost.count), "\(replay.stdout)")
            var removed: [String] = []
            if case .array(let lines)? = report?["diff"] {
                for line in lines where line["removed"] == .bool(true) { removed.append(text(line["appTransactionId"]) ?? "") }
            }
            #expect(removed.sorted() == vanished.sorted(), "\(replay.stdout)")
            for customer in vanished {
                let query = try workspace.cli("query", db: database, ["--app-transaction-id", customer])
                #expect(query.status == 1, "a customer with no event left still answers: \(query.stdout)")
            }
        }

        @Test("the log in parts: a shared header, a notification's body or a nested JWS edited behind the engine's back is named")
        func editedPartsAreNamed() throws {
            let fixture = try Fixture()
            let probe0 = try Probe(fixture.workspace.path("genuine.sqlite"))
            // A notification with a nested JWS, and the first event that uses that header.
            let notification = try probe0.int("SELECT min(event_seq) FROM jws_nested")
            let headerId = try probe0.int("SELECT header_id FROM jws_nested WHERE event_seq = \(notification) ORDER BY position LIMIT 1")
            let firstUser = try probe0.int(
                "SELECT min(seq) FROM (SELECT seq FROM events WHERE header_id = \(headerId) UNION SELECT event_seq FROM jws_nested WHERE header_id = \(headerId))")
            #expect(notification > 0 && headerId > 0 && firstUser > 0)
            // The certificate chain's header, shared by every event: the first event using it is named.
            let header = try fixture.tampered("edited-header") { probe in
                try probe.execute("""
                    DROP TRIGGER jws_headers_are_immutable_update;
                    UPDATE jws_headers SET header = 'eyJhbGciOiJub25lIn0' WHERE id = \(headerId);
                    CREATE TRIGGER jws_headers_are_immutable_update BEFORE UPDATE ON jws_headers
                    BEGIN SELECT RAISE(ABORT, 'JWS headers are immutable: UPDATE is not allowed'); END;
                    """)
            }
            try expectFlagged(fixture, header, seq: firstUser, problem: "altered")
            // The decoded payload of a nested transaction: a longer expiry.
            let nested = try fixture.tampered("edited-nested") { probe in
                try probe.execute("""
                    DROP TRIGGER jws_nested_are_immutable_update;
                    UPDATE jws_nested SET payload = replace(payload, '"quantity":1', '"quantity":9') WHERE event_seq = \(notification);
                    CREATE TRIGGER jws_nested_are_immutable_update BEFORE UPDATE ON jws_nested
                    BEGIN SELECT RAISE(ABORT, 'nested JWS are immutable: UPDATE is not allowed'); END;
                    """)
                #expect(try probe.loggedInput(notification) != (try Probe(fixture.workspace.path("genuine.sqlite")).loggedInput(notification)))
            }
            try expectFlagged(fixture, nested, seq: notification, problem: "altered")
            // The notification's own decoded payload.
            let body = try fixture.tampered("edited-body") { probe in
                try probe.execute(Self.dropTriggers + """
                    UPDATE events SET body = replace(body, '"notificationType":"', '"notificationType":"X') WHERE seq = \(notification);
                    """ + Self.restoreTriggers)
            }
            try expectFlagged(fixture, body, seq: notification, problem: "altered")
            // A nested JWS removed: the notification no longer gives back its JWS.
            let removed = try fixture.tampered("removed-nested") { probe in
                try probe.execute("""
                    DROP TRIGGER jws_nested_are_immutable_delete;
                    DELETE FROM jws_nested WHERE event_seq = \(notification);
                    CREATE TRIGGER jws_nested_are_immutable_delete BEFORE DELETE ON jws_nested
                    BEGIN SELECT RAISE(ABORT, 'nested JWS are immutable: DELETE is not allowed'); END;
                    """)
            }
            try expectFlagged(fixture, removed, seq: notification, problem: "altered")
        }

        @Test("the facts the reducers read, swapped for another customer's lifetime purchase: audit names the event")
        func editedFactsAreNamed() throws {
            let fixture = try Fixture()
            // A subscriber, and a lifetime purchase of another customer.
            let probe0 = try Probe(fixture.workspace.path("genuine.sqlite"))
            let victimRow = try probe0.strings("SELECT customer_key || ' ' || seq FROM events WHERE kind = 'transaction' AND customer_key IN (SELECT customer_key FROM events) ORDER BY seq LIMIT 1")[0].split(separator: " ")
            let donorRow = try probe0.strings("SELECT customer_key || ' ' || seq FROM events WHERE kind = 'notification' AND notification_type = 'ONE_TIME_CHARGE' AND customer_key <> '\(victimRow[0])' ORDER BY seq LIMIT 1")[0].split(separator: " ")
            let (victim, victimSeq, donor, donorSeq) = (String(victimRow[0]), Int64(victimRow[1])!, String(donorRow[0]), Int64(donorRow[1])!)
            let database = try fixture.tampered("edited-facts") { probe in
                try probe.execute("""
                    DROP TRIGGER event_facts_are_immutable_update;
                    UPDATE event_facts SET facts = (SELECT facts FROM event_facts WHERE customer_key = '\(donor)' AND seq = \(donorSeq))
                        WHERE customer_key = '\(victim)' AND seq = \(victimSeq);
                    CREATE TRIGGER event_facts_are_immutable_update BEFORE UPDATE ON event_facts
                    BEGIN SELECT RAISE(ABORT, 'event facts are immutable: UPDATE is not allowed'); END;
                    """)
            }
            try expectFlagged(fixture, database, seq: victimSeq, problem: "facts")
            // Why it matters: a replay from the edited facts grants the victim a lifetime purchase nobody signed.
            try fixture.workspace.cli("replay", db: database, ["--quiet"])
            let after = try fixture.workspace.cli("query", db: database, ["--app-transaction-id", victim, "--at", "\(moments[6])"])
            #expect(after.stdout.contains("com.example.lifetime"), "the edit did not reach the state (test is void): \(after.stdout)")
            // replay --reverify audits first and refuses.
            let reverify = try fixture.workspace.cli("replay", db: database, ["--quiet", "--reverify"])
            #expect(reverify.status == 1 && reverify.stdout.contains("facts"), "\(reverify.stdout) \(reverify.stderr)")
        }

        @Test("facts inserted for a customer under another event's seq (INSERT needs no trigger dropped): audit names them")
        func insertedFactsAreNamed() throws {
            let fixture = try Fixture()
            let probe0 = try Probe(fixture.workspace.path("genuine.sqlite"))
            let victim = try probe0.customers()[0]
            let donor = try probe0.strings("SELECT customer_key || ' ' || seq FROM events WHERE notification_type = 'ONE_TIME_CHARGE' AND customer_key <> '\(victim)' ORDER BY seq LIMIT 1")[0].split(separator: " ")
            let donorSeq = Int64(donor[1])!
            let database = try fixture.tampered("inserted-facts") { probe in
                try probe.execute("INSERT INTO event_facts (customer_key, seq, facts) SELECT '\(victim)', seq, facts FROM event_facts WHERE customer_key = '\(donor[0])' AND seq = \(donorSeq)")
            }
            try expectFlagged(fixture, database, seq: donorSeq, problem: "belong to no event")
        }

        @Test("a projection edited: replay reports the customer changed and restores the signed truth")
        func editedProjectionIsRestoredByReplay() throws {
            let fixture = try Fixture()
            let probe0 = try Probe(fixture.workspace.path("genuine.sqlite"))
            let customers = try probe0.customers()
            let (victim, donor) = (customers[0], try probe0.strings("SELECT customer_key FROM events WHERE notification_type = 'ONE_TIME_CHARGE' LIMIT 1")[0])
            let database = try fixture.tampered("edited-projection") { probe in
                try probe.execute("UPDATE projections SET state = (SELECT state FROM projections WHERE customer_key = '\(donor)') WHERE customer_key = '\(victim)'")
            }
            let at = ["--at", "\(moments[5])"]
            let genuine = try fixture.workspace.cli("query", db: "genuine.sqlite", ["--app-transaction-id", victim] + at)
            let forged = try fixture.workspace.cli("query", db: database, ["--app-transaction-id", victim] + at)
            #expect(forged.stdout != genuine.stdout, "the edit did not change the answer (test is void)")
            let replay = try fixture.workspace.cli("replay", db: database, ["--quiet"])
            let report = try? JSONParser().parse(replay.stdout)
            #expect(Self.int(report?["changed"]) == 1, "\(replay.stdout) \(replay.stderr)")
            let restored = try fixture.workspace.cli("query", db: database, ["--app-transaction-id", victim] + at)
            #expect(restored.stdout == genuine.stdout)
        }
    }
}
