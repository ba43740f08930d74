import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// How each command opens the database: readers never create, migrate or
    /// write it, and never leave files behind; a database from a newer engine is refused;
    /// a lock held while the database is created or migrated is waited for.
    @Suite("Opening the database")
    struct Opening {
        /// The files in `folder` whose names start with `prefix`, sorted.
        static func files(_ folder: URL, _ prefix: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasPrefix(prefix) }.sorted()
        }

        @Test("a database file that does not exist: the reading commands and replay fail DATABASE_NOT_FOUND, exit 3, and create nothing")
        func missingDatabaseIsNotCreated() throws {
            let workspace = try Workspace(name: "not-found")
            let commands: [[String]] = [
                ["query", "--app-transaction-id", "704000000000000000"], ["audit"], ["replay", "--quiet"], ["replay", "--diff"],
            ]
            for command in commands {
                let outcome = try workspace.cli(command[0], db: "typo.sqlite", Array(command.dropFirst()))
                #expect(outcome.status == 3, "\(command): exit \(outcome.status) \(outcome.stdout) \(outcome.stderr)")
                #expect(outcome.stderr.contains("DATABASE_NOT_FOUND"), "\(command): \(outcome.stderr)")
                #expect(Self.files(workspace.folder, "typo").isEmpty, "\(command) created \(Self.files(workspace.folder, "typo"))")
            }
            // The library says the same.
            #expect(throws: EngineError.self) { try Engine(configuration: workspace.configuration(), databasePath: workspace.path("typo.sqlite"), mode: .readOnly) }
            do {
                _ = try Engine(configuration: workspace.configuration(), databasePath: workspace.path("typo.sqlite"), mode: .existing)
                Scenario.fail("opened a missing database for replay")
            } catch let error as EngineError {
                #expect(error.code == "DATABASE_NOT_FOUND")
            }
            #expect(Self.files(workspace.folder, "typo").isEmpty)
            // Ingest creates it.
            let input = try workspace.write(lines: History.generate(lines: 5, seed: 3).lines.map(\.text), to: "five.ndjson")
            let ingest = try workspace.cli("ingest", db: "typo.sqlite", [input.path])
            #expect(ingest.status == 0 || ingest.status == 1, "\(ingest.stderr)")
            #expect(Self.files(workspace.folder, "typo").contains("typo.sqlite"))
        }

        /// Every command on `database`: exit 3 with `code`, the file's bytes unchanged.
        func expectRefused(_ workspace: Workspace, _ database: String, code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let input = try workspace.write(lines: History.generate(lines: 5, seed: 4).lines.map(\.text), to: "five.ndjson")
            let before = Tool.read(workspace.path(database))
            let sideFiles = Self.files(workspace.folder, database)
            for command in [["ingest", input.path], ["query", "--app-transaction-id", "704000000000000000"], ["replay", "--quiet"], ["audit"]] {
                let outcome = try workspace.cli(command[0], db: database, Array(command.dropFirst()))
                #expect(outcome.status == 3, "\(command[0]): exit \(outcome.status) \(outcome.stdout) \(outcome.stderr)", sourceLocation: sourceLocation)
                #expect(outcome.stderr.contains(code), "\(command[0]): \(outcome.stderr)", sourceLocation: sourceLocation)
                #expect(outcome.stdout.isEmpty, "\(command[0]) printed \(outcome.stdout)", sourceLocation: sourceLocation)
            }
            #expect(Tool.read(workspace.path(database)) == before, "\(database) was changed", sourceLocation: sourceLocation)
            #expect(!Self.files(workspace.folder, database).contains(database + "-head") || sideFiles.contains(database + "-head"),
                    "a head was recorded beside \(database)", sourceLocation: sourceLocation)
        }

        @Test("a database from a newer engine (an unknown migration, or a higher user_version): DATABASE_TOO_NEW, exit 3, nothing written")
        func newerDatabaseIsRefused() throws {
            let workspace = try Workspace(name: "too-new")
            let input = try workspace.write(lines: History.generate(lines: 20, seed: 5).lines.map(\.text), to: "twenty.ndjson")
            try workspace.cli("ingest", db: "base.sqlite", [input.path])
            let unknown = try workspace.copyDatabase(workspace.path("base.sqlite"), to: "unknown.sqlite")
            try Probe(unknown).execute("INSERT INTO schema_migrations (identifier, applied_at) VALUES ('999_from_the_future', 0)")
            try expectRefused(workspace, "unknown.sqlite", code: "DATABASE_TOO_NEW")
            let higher = try workspace.copyDatabase(workspace.path("base.sqlite"), to: "higher.sqlite")
            try Probe(higher).execute("PRAGMA user_version = 99")
            try expectRefused(workspace, "higher.sqlite", code: "DATABASE_TOO_NEW")
            // The engine records how far the schema has come.
            #expect(try Probe(workspace.path("base.sqlite")).int("PRAGMA user_version") >= 4)
        }

        @Test("a database with a pending migration: readers answer from it and never migrate it; a writer then migrates it")
        func readersNeverMigrate() throws {
            let workspace = try Workspace(name: "pending")
            let history = History.generate(lines: 30, seed: 6)
            let input = try workspace.write(lines: history.lines.map(\.text), to: "thirty.ndjson")
            try workspace.cli("ingest", db: "old.sqlite", [input.path])
            let at = ["--at", "\(moments[4])"]
            let expected = try workspace.cli("query", db: "old.sqlite", ["--app-transaction-id", history.customers[0]] + at)
            #expect(expected.status == 0)
            // As a database made before migration 004 looks (its table and record gone).
            try Probe(workspace.path("old.sqlite")).execute(
                "DROP TABLE projections_next; DELETE FROM schema_migrations WHERE identifier = '004_projections_next'; PRAGMA user_version = 0")
            let before = Tool.read(workspace.path("old.sqlite"))
            let query = try workspace.cli("query", db: "old.sqlite", ["--app-transaction-id", history.customers[0]] + at)
            #expect(query.status == 0 && query.stdout == expected.stdout, "\(query.stdout) \(query.stderr)")
            let audit = try workspace.cli("audit", db: "old.sqlite")
            #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
            #expect(Tool.read(workspace.path("old.sqlite")) == before, "a reader wrote the database")
            #expect(try Probe(workspace.path("old.sqlite")).strings("SELECT identifier FROM schema_migrations WHERE identifier = '004_projections_next'").isEmpty,
                    "a reader migrated the database")
            let ingest = try workspace.cli("ingest", db: "old.sqlite", [input.path])
            #expect(ingest.status == 1, "\(ingest.stderr)")
            #expect(try Probe(workspace.path("old.sqlite")).strings("SELECT identifier FROM schema_migrations WHERE identifier = '004_projections_next'").count == 1)
        }

        @Test("a lock held while a new database is being created: ingest and query wait for it and answer, never DATABASE_BUSY")
        func lockHeldAtFirstOpenIsWaitedFor() throws {
            // A short busy timeout, so that a lock held past it is a matter of moments.
            let busyTimeout = 200
            let workspace = try Workspace(name: "first-open", busyTimeoutMilliseconds: busyTimeout)
            let history = History.generate(lines: 20, seed: 8)
            let input = try workspace.write(lines: history.lines.map(\.text), to: "twenty.ndjson")
            // Another process created the file and holds the write lock, past the busy timeout,
            // before any schema exists.
            let holder = try Connection(path: workspace.path("new.sqlite"), mode: .readWrite)
            try holder.execute("BEGIN IMMEDIATE")
            let ingest = try workspace.start("ingest", db: "new.sqlite", [input.path], label: "ingest")
            let query = try workspace.start("query", db: "new.sqlite", ["--app-transaction-id", history.customers[0]], label: "query")
            // Release once ingest has opened the file and is still running ten busy timeouts later
            // (it met the lock at once: creating the schema is its first write), or has given up.
            let opened = ingest.waitUntil(timeout: 120) { ingest.hasOpen(workspace.path("new.sqlite")) }
            #expect(opened, "ingest never opened the database")
            let gaveUp = ingest.waitForExit(timeout: 10 * Double(busyTimeout) / 1000)
            #expect(!gaveUp, "ingest gave up while the lock was held")
            try holder.execute("COMMIT")
            let queried = query.wait(timeout: 120)
            let answer = try? JSONParser().parse(queried.stdout)
            #expect(queried.status == 0 || (queried.status == 1 && text(answer?["error"]?["code"]) == "NOT_FOUND"),
                    "query: exit \(queried.status) \(queried.stdout) \(queried.stderr)")
            let ingested = ingest.wait(timeout: 120)
            #expect(ingested.status == 1 && !ingested.stderr.contains("DATABASE"), "ingest: exit \(ingested.status) \(ingested.stderr)")
            expectOutcomes(ingested.stdout, for: history.lines)
            #expect(try Probe(workspace.path("new.sqlite")).eventCount() == Int64(history.identities.count))
        }

        // MARK: Another user, read-only files

        /// `entitlements ARGS` as the unprivileged user `uid` (the tests run as root).
        static func run(as uid: Int, _ arguments: [String], in workspace: Workspace) throws -> Tool.Outcome {
            try Tool.run(arguments, in: workspace.folder, shell: "exec setpriv --reuid=\(uid) --regid=\(uid) --clear-groups \"$ENTITLEMENTS\" \"$@\"")
        }

        @Test("a writer whose database it may write but whose -wal and -shm belong to another user: DATABASE_READ_ONLY naming them, exit 3",
              .enabled(if: Faults.canDropPrivileges, "needs root and setpriv to act as two users"))
        func sideFilesOfAnotherUser() throws {
            let workspace = try Workspace(name: "side-files")
            chmod(workspace.folder.path, 0o777)
            for name in ["config.json", "root.pem"] { chmod(workspace.path(name), 0o644) }
            let history = History.generate(lines: 6, seed: 0x51DE)
            let lines = try workspace.write(lines: history.lines.map(\.text), to: "lines.ndjson")
            chmod(lines.path, 0o644)
            try workspace.cli("ingest", db: "shared.sqlite", [lines.path])
            let database = workspace.path("shared.sqlite")
            chmod(database, 0o666)
            // This process (root) holds a connection open: its -wal and -shm stay, root's, 0644.
            let holder = try Connection(path: database, mode: .readWriteExisting)
            _ = try holder.scalarInt("SELECT count(*) FROM events")
            for suffix in ["-wal", "-shm"] {
                #expect(FileManager.default.fileExists(atPath: database + suffix), "no \(suffix) while a connection is open")
                chmod(database + suffix, 0o644)
            }
            let refused = try Self.run(
                as: 65534, ["ingest", "--db", database, "--config", workspace.configPath, lines.path], in: workspace)
            #expect(refused.status == 3, "exit \(refused.status): \(refused.stderr)")
            #expect(refused.stderr.contains("DATABASE_READ_ONLY") && refused.stderr.contains("-wal is not writable by this user"), "\(refused.stderr)")
            _ = holder
        }

        @Test("a database read by another user: query and audit answer, leave no file, and the owner's ingest still writes",
              .enabled(if: Faults.canDropPrivileges, "needs root and setpriv to act as two users"))
        func readByAnotherUser() throws {
            let workspace = try Workspace(name: "other-user")
            let (owner, reader) = (65534, 65533)
            chmod(workspace.folder.path, 0o777)
            for name in ["config.json", "root.pem"] { chmod(workspace.path(name), 0o644) }
            let history = History.generate(lines: 60, seed: 0x05E2)
            let first = try workspace.write(lines: history.lines.prefix(30).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(30).map(\.text), to: "more.ndjson")
            for file in [first, more] { chmod(file.path, 0o644) }
            let common = ["--db", workspace.path("shared.sqlite"), "--config", workspace.configPath]
            let created = try Self.run(as: owner, ["ingest"] + common + [first.path], in: workspace)
            #expect(created.status == 0 || created.status == 1, "\(created.stderr)")
            let customer = history.customers[0]
            let at = ["--at", "\(moments[4])"]
            let expected = try Self.run(as: owner, ["query"] + common + ["--app-transaction-id", customer] + at, in: workspace)
            #expect(expected.status == 0, "\(expected.stderr)")
            // Whatever the owner's own commands leave beside the database (their -wal and -shm, say).
            let ownerFiles = Self.files(workspace.folder, "shared.sqlite")

            // Read with the owner's -wal and -shm present, and with none (as after the owner's
            // last connection closed): the answers are the owner's, and no file is added.
            for round in ["beside the owner's side files", "with no side file"] {
                if round == "with no side file" {
                    try Faults.closeCleanly(workspace.path("shared.sqlite"))
                    chmod(workspace.path("shared.sqlite"), 0o644)
                }
                let filesBefore = Self.files(workspace.folder, "shared.sqlite")
                let query = try Self.run(as: reader, ["query"] + common + ["--app-transaction-id", customer] + at, in: workspace)
                #expect(query.status == 0 && query.stdout == expected.stdout, "\(round): query as another user: exit \(query.status) \(query.stdout) \(query.stderr)")
                let audit = try Self.run(as: reader, ["audit"] + common, in: workspace)
                #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "\(round): audit as another user: \(audit.stdout) \(audit.stderr)")
                #expect(Self.files(workspace.folder, "shared.sqlite") == filesBefore, "\(round): the reader left \(Self.files(workspace.folder, "shared.sqlite"))")
            }
            _ = ownerFiles
            let refused = try Self.run(as: reader, ["ingest"] + common + [more.path], in: workspace)
            #expect(refused.status == 3 && refused.stderr.contains("DATABASE_READ_ONLY"), "\(refused.stderr)")

            let ingest = try Self.run(as: owner, ["ingest"] + common + [more.path], in: workspace)
            #expect(ingest.status == 0 || ingest.status == 1, "the owner's ingest after another user read: exit \(ingest.status) \(ingest.stderr)")
            #expect(!ingest.stderr.contains("DATABASE"), "\(ingest.stderr)")
            expectOutcomes(ingest.stdout, for: Array(history.lines.dropFirst(30)))
        }
    }
}
