import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// Migration 012 rewrites a log made by the previous schema into parts,
    /// on databases that build made: `Fixtures/legacy/*-011.sqlite`, written by the
    /// engine at commit c8ec548 (schema 011) from the demo's histories with a usage
    /// record and a quarantined input, and from each real Apple-signed sample.
    @Suite("Compact log migration")
    struct CompactLogMigration {
        struct Legacy {
            var database: String
            var config: String
            /// Files the configuration names, copied beside it.
            var extras: [String]
        }

        static let legacyFolder = Scenario.packageRoot.appendingPathComponent("Fixtures/legacy")
        static let legacies = [
            Legacy(database: "demo-011.sqlite", config: "../demo/config.json", extras: ["../demo/test-root.pem"]),
            Legacy(database: "real-sandbox-011.sqlite", config: "real-sandbox.json", extras: []),
            Legacy(database: "real-production-011.sqlite", config: "real-production.json", extras: []),
        ]

        /// A workspace holding a copy of the legacy database (as `db.sqlite`, with its head
        /// record) and its configuration (as `legacy.json`).
        static func workspace(_ legacy: Legacy) throws -> Workspace {
            let workspace = try Workspace(name: "legacy")
            for (from, to) in [(legacy.database, "db.sqlite"), (legacy.database + "-head", "db.sqlite-head"), (legacy.config, "legacy.json")]
                + legacy.extras.map({ ($0, String($0.split(separator: "/").last!)) })
            {
                try FileManager.default.copyItem(
                    at: legacyFolder.appendingPathComponent(from), to: workspace.url(to))
            }
            return workspace
        }

        /// One event as the old schema stored it.
        struct OldRow: Equatable {
            var seq: Int64
            var identity: String
            var raw: String
            var payload: String
            var prevHash: [UInt8]
            var hash: [UInt8]
        }

        static func oldRows(_ path: String) throws -> [OldRow] {
            let connection = try Connection(path: path, mode: .readOnly)
            let statement = try connection.prepare("SELECT seq, identity, raw, payload, prev_hash, hash FROM events ORDER BY seq")
            var rows: [OldRow] = []
            while try statement.step() {
                rows.append(OldRow(
                    seq: statement.int64(0), identity: statement.string(1) ?? "", raw: statement.string(2) ?? "",
                    payload: statement.string(3) ?? "", prevHash: statement.blob(4) ?? [], hash: statement.blob(5) ?? []))
            }
            return rows
        }

        static func run(_ workspace: Workspace, _ arguments: [String], shell: String? = nil) throws -> Tool.Outcome {
            let command = arguments[0]
            return try Tool.run(
                [command, "--db", "db.sqlite", "--config", "legacy.json"] + arguments.dropFirst(), in: workspace.folder, shell: shell)
        }

        @Test("each legacy database migrates in place: every seq, identity and hash kept, every JWS given back byte for byte, audit clean, replay changes nothing",
              arguments: legacies.map(\.database))
        func migratesInPlace(database: String) throws {
            let legacy = Self.legacies.first { $0.database == database }!
            let workspace = try Self.workspace(legacy)
            let path = workspace.path("db.sqlite")
            let before = try Self.oldRows(path)
            #expect(!before.isEmpty)
            let rawBytes = before.reduce(0) { $0 + $1.raw.utf8.count }

            // A writer opens it: the migration runs, and says so on standard error.
            let replay = try Self.run(workspace, ["replay"])
            #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
            #expect(replay.stdout.contains("\"changed\":0"), "the migrated log replays to other answers: \(replay.stdout)")
            #expect(replay.stderr.contains("012_compact_log") && replay.stderr.contains("\(before.count) of \(before.count) events"),
                    "no progress on standard error: \(replay.stderr)")

            let probe = try Probe(path)
            #expect(try probe.strings("SELECT identifier FROM schema_migrations WHERE identifier = '012_compact_log'") == ["012_compact_log"])
            let store = try EventStore(path: path, hash: { $0 }, mode: .readOnly)
            let after = try probe.connection.prepare("SELECT seq, identity, prev_hash, hash FROM events ORDER BY seq")
            var index = 0
            while try after.step() {
                guard index < before.count else { Issue.record("more events after the migration"); break }
                let old = before[index]
                #expect(after.int64(0) == old.seq && after.string(1) == old.identity)
                #expect(after.blob(2) == old.prevHash && after.blob(3) == old.hash, "seq \(old.seq): the chain changed")
                #expect(try store.loggedInput(at: old.seq) == old.raw, "seq \(old.seq): the JWS does not come back byte for byte")
                index += 1
            }
            #expect(index == before.count)
            // The decoded payloads read with sqlite3 are what the old table held.
            let decoded = try probe.strings("SELECT payload FROM events_decoded ORDER BY seq")
            #expect(decoded.count == before.count)
            for (text, old) in zip(decoded, before) {
                #expect(try JSONParser().parse(Array(text.utf8)) == JSONParser().parse(Array(old.payload.utf8)), "seq \(old.seq)")
            }
            // Every JWS is in parts, and apart from the headers (each stored once) the parts are a
            // fraction of the JWS; with more than a few events, headers included too.
            let whole = try probe.int("SELECT count(*) FROM events WHERE raw IS NOT NULL AND kind <> 'usage'")
            #expect(whole == 0, "\(whole) JWS kept whole")
            let parts = try probe.int(
                "SELECT coalesce(sum(length(body) + length(signature)), 0) + (SELECT coalesce(sum(length(payload) + length(signature)), 0) FROM jws_nested) FROM events")
            let headers = try probe.int("SELECT coalesce(sum(length(header)), 0) FROM jws_headers")
            #expect(parts * 4 < rawBytes, "parts \(parts) B against \(rawBytes) B of JWS")
            if before.count > 10 { #expect((parts + headers) * 4 < rawBytes, "parts and headers \(parts + headers) B against \(rawBytes) B") }

            let audit = try Self.run(workspace, ["audit"])
            #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "\(audit.stdout) \(audit.stderr)")
            // Opened again, nothing more to do.
            let again = try Self.run(workspace, ["replay"])
            #expect(again.status == 0 && !again.stderr.contains("012_compact_log"), "\(again.stderr)")
        }

        @Test("before a writer migrates it: query and history answer from the old layout, audit says DATABASE_NOT_MIGRATED (exit 3) and what to run")
        func readersOfAnUnmigratedDatabase() throws {
            let workspace = try Self.workspace(Self.legacies[0])
            let before = try Self.oldRows(workspace.path("db.sqlite"))
            let query = try Self.run(workspace, ["query", "--app-transaction-id", "704100000000000005"])
            #expect(query.status == 0 && query.stdout.contains("\"purchases\""), "\(query.stdout) \(query.stderr)")
            let audit = try Self.run(workspace, ["audit"])
            #expect(audit.status == 3, "exit \(audit.status): \(audit.stdout) \(audit.stderr)")
            #expect(audit.stderr.contains("DATABASE_NOT_MIGRATED") && audit.stderr.contains("012_compact_log"), "\(audit.stderr)")
            // Readers changed nothing.
            #expect(try Self.oldRows(workspace.path("db.sqlite")) == before)
        }

        @Test("a view an operator made on the old events table does not stop the migration, and reads the new table")
        func anOperatorsViewSurvives() throws {
            let workspace = try Self.workspace(Self.legacies[0])
            let path = workspace.path("db.sqlite")
            let before = try Self.oldRows(path)
            try Probe(path).execute("CREATE VIEW my_recent AS SELECT seq, kind, event_id FROM events ORDER BY seq DESC")
            let replay = try Self.run(workspace, ["replay"])
            #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
            #expect(try Probe(path).int("SELECT count(*) FROM my_recent") == Int64(before.count))
            let audit = try Self.run(workspace, ["audit"])
            #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "\(audit.stdout) \(audit.stderr)")
        }

        @Test("a migration that cannot finish (a file-size limit) leaves the database as it was; the next open migrates it")
        func interruptedMigrationChangesNothing() throws {
            let workspace = try Self.workspace(Self.legacies[0])
            let path = workspace.path("db.sqlite")
            let before = try Self.oldRows(path)
            // No file may grow past 64 KiB: the write-ahead log the rewrite goes into cannot hold it.
            setenv("LIMIT_BLOCKS", "128", 1)
            defer { unsetenv("LIMIT_BLOCKS") }
            let failed = try Self.run(workspace, ["replay"], shell: ResourceFaults.limitedShell)
            unsetenv("LIMIT_BLOCKS")
            #expect(failed.status == 3, "exit \(failed.status): \(failed.stdout) \(failed.stderr)")
            #expect(failed.stderr.contains("DATABASE_FULL"), "\(failed.stderr)")
            // As it was: the old table, every row, no new table, 012 not recorded.
            #expect(try Self.oldRows(path) == before)
            let probe = try Probe(path)
            #expect(try probe.int("SELECT count(*) FROM sqlite_master WHERE name IN ('jws_headers', 'jws_nested', 'events_compact', 'events_decoded')") == 0)
            #expect(try probe.int("SELECT count(*) FROM schema_migrations WHERE identifier = '012_compact_log'") == 0)

            let replay = try Self.run(workspace, ["replay"])
            #expect(replay.status == 0 && replay.stdout.contains("\"changed\":0"), "\(replay.stdout) \(replay.stderr)")
            let audit = try Self.run(workspace, ["audit"])
            #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "\(audit.stdout) \(audit.stderr)")
        }
    }
}
