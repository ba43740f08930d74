import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
import TestPKI
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// A full disk, a read-only database, a missing or damaged file: a clear error and
    /// exit code 3 ("the database could not be used"), and never a half-applied batch.
    @Suite("Resource faults")
    struct ResourceFaults {
        static let limitedShell = "trap '' XFSZ; ulimit -f \"$LIMIT_BLOCKS\"; exec \"$ENTITLEMENTS\" \"$@\""

        /// The disk fills up partway: a batch that does not fit is not stored at all, every
        /// acknowledged batch is stored whole, a replay that does not fit changes nothing,
        /// and once there is room again, ingesting the same input completes the log.
        ///
        /// - Parameters:
        ///   - run: runs `entitlements ARGS` against the constrained disk.
        ///   - makeRoom: lifts the constraint.
        func fillTheDisk(
            workspace: Workspace, database: String, fullCodes: [String],
            run: ([String]) throws -> Tool.Outcome, fillRemainingSpace: () throws -> Void, replayFits: Bool = false,
            makeRoom: () throws -> Void
        ) throws {
            let history = History.generate(lines: parameter("RELIABILITY_FULL_INPUTS", 400), seed: 0xF011)
            let baselineLines = Array(history.lines.prefix(30))
            let restLines = Array(history.lines.dropFirst(30))
            let all = try workspace.write(lines: history.lines.map(\.text), to: "all.ndjson")
            let baseline = try workspace.write(lines: baselineLines.map(\.text), to: "baseline.ndjson")
            let rest = try workspace.write(lines: restLines.map(\.text), to: "rest.ndjson")
            try workspace.cli("ingest", db: "reference.sqlite", [all.path])
            let common = ["--db", workspace.path(database), "--config", workspace.configPath]

            let first = try run(["ingest"] + common + [baseline.path])
            #expect(first.status == 0 || first.status == 1, "the baseline must fit: \(first.stderr)")
            let baseEvents = try Probe(workspace.path(database)).eventCount()
            let baseQuarantine = try Probe(workspace.path(database)).quarantineCount()
            #expect(baseEvents > 0)

            // One batch that cannot fit (one document: a Get Transaction History page of 2,000
            // transactions, 12 MB in, a few MB as stored): none of it is stored, nothing is acknowledged.
            let signer = Signer(Scenario.pki)
            let page = (0..<2_000).map { k in
                signer.sign(TestPayloads.transaction(
                    transactionId: String(format: "5%015d", k), appTransactionId: String(format: "7050%014d", k),
                    productId: "com.example.lifetime", type: "Non-Consumable", expiresDate: nil))
            }
            let big = try workspace.write(lines: [TestPayloads.body(signedTransactions: page)], to: "big.ndjson")
            let whole = try run(["ingest"] + common + [big.path])
            #expect(whole.status == 3, "exit \(whole.status): \(whole.stderr)")
            #expect(fullCodes.contains { whole.stderr.contains($0) }, "\(whole.stderr)")
            #expect(whole.stdout.isEmpty, "a batch that was rolled back was acknowledged")
            #expect(try Probe(workspace.path(database)).eventCount() == baseEvents)
            #expect(try Probe(workspace.path(database)).quarantineCount() == baseQuarantine)

            // A stream, committed batch by batch: what was acknowledged is stored, and nothing else.
            let partial = try run(["ingest"] + common + ["--batch", "20", rest.path])
            #expect(partial.status == 3, "exit \(partial.status): \(partial.stderr)")
            #expect(fullCodes.contains { partial.stderr.contains($0) }, "\(partial.stderr)")
            let acknowledged = outputObjects(partial.stdout)
            var lines = 0, items = 0
            while items < acknowledged.count, lines < restLines.count {
                items += restLines[lines].items.count
                lines += 1
            }
            #expect(items == acknowledged.count, "acknowledged \(acknowledged.count) items: not whole lines")
            #expect(lines < restLines.count, "the disk never filled")
            expectOutcomes(partial.stdout, for: Array(restLines.prefix(lines)))
            let appended = acknowledged.filter { text($0["result"]) == "appended" }
            let probe = try Probe(workspace.path(database))
            #expect(try probe.eventCount() == baseEvents + Int64(appended.count), "the log holds other events than the acknowledged ones")
            let stored = try probe.eventIds()
            #expect(appended.allSatisfy { stored.contains(text($0["eventId"]) ?? "") })
            print("disk full: \(lines) of \(restLines.count) lines acknowledged before the disk filled: \(partial.stderr.prefix(160))")

            // What a customer is told now must survive a replay that does not fit: a replay
            // always writes (a new generation of every projection), and the disk has no room.
            let customers = try probe.customers()
            let answersBefore = try answers(try workspace.engine(database, mode: .readOnly), customers: customers)
            try fillRemainingSpace()
            let replay = try run(["replay"] + common + ["--quiet"])
            if replayFits {
                // On a tmpfs the write-ahead log keeps the pages the rolled-back batches took, and a
                // replay may fit in them: then it completes and changes no answer (the test with no
                // such pages left is `fullDiskKeepsAnswering`).
                #expect(replay.status == 3 && fullCodes.contains { replay.stderr.contains($0) }
                        || replay.status == 0 && replay.stdout.contains("\"changed\":0"),
                        "replay on a full disk: exit \(replay.status): \(replay.stdout) \(replay.stderr)")
            } else {
                #expect(replay.status == 3, "replay on a full disk: exit \(replay.status): \(replay.stdout) \(replay.stderr)")
                #expect(fullCodes.contains { replay.stderr.contains($0) }, "\(replay.stderr)")
            }
            print("replay on the full disk: exit \(replay.status) \(replay.stderr.prefix(160))")
            let answersAfter = try answers(try workspace.engine(database, mode: .readOnly), customers: customers)
            let unchanged = answersBefore == answersAfter
            #expect(unchanged, "a replay on a full disk changed answers:\n\(differences(answersBefore, answersAfter))")
            // Reads keep answering on the full disk.
            let audit = try run(["audit"] + common)
            #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "audit on a full disk: \(audit.stdout) \(audit.stderr)")
            let query = try run(["query"] + common + ["--app-transaction-id", customers[0], "--at", "\(moments[3])"])
            #expect(query.status == 0 && query.stdout == answersBefore["\(customers[0])@\(moments[3])"].map { $0 + "\n" },
                    "query on a full disk: exit \(query.status) \(query.stdout) \(query.stderr)")

            // Room again: the same input once more, and nothing is missing.
            try makeRoom()
            let resumed = try workspace.cli("ingest", db: workspace.path(database), [all.path])
            #expect(resumed.status == 1, "\(resumed.stderr)")
            expectOutcomes(resumed.stdout, for: history.lines)
            try expectSameAsReference(workspace: workspace, database: database, reference: "reference.sqlite", history: history)
        }

        @Test("a full file system (small tmpfs) mid-batch: exit 3 DATABASE_FULL, no half-applied batch",
              .enabled(if: Faults.canMount, "needs root and mount (tmpfs)"))
        func diskFullOnSmallFilesystem() throws {
            let workspace = try Workspace(name: "full", maxInputBytes: 16 << 20)
            let disk = try Faults.SmallDisk(at: workspace.url("small"), size: "3m")
            try fillTheDisk(
                workspace: workspace, database: "small/db.sqlite", fullCodes: ["DATABASE_FULL"],
                run: { arguments in try Tool.run(arguments, in: workspace.folder) },
                fillRemainingSpace: { try Faults.fill(workspace.url("small/filler")) }, replayFits: true,
                makeRoom: {
                    try FileManager.default.removeItem(at: workspace.url("small/filler"))
                    try disk.remount("size=64m")
                })
        }

        @Test("a file-size limit (ulimit -f) reached mid-batch: exit 3, no half-applied batch")
        func diskFullByFileSizeLimit() throws {
            let workspace = try Workspace(name: "ulimit", maxInputBytes: 16 << 20)
            setenv("LIMIT_BLOCKS", "5120", 1)  // 2.5 MiB per file
            defer { unsetenv("LIMIT_BLOCKS") }
            try fillTheDisk(
                workspace: workspace, database: "limited.sqlite", fullCodes: ["DATABASE_FULL"],
                run: { arguments in try Tool.run(arguments, in: workspace.folder, shell: Self.limitedShell) },
                fillRemainingSpace: {
                    // No file may grow past 64 KiB: the write-ahead log a replay writes its
                    // new generation into cannot hold it (the -shm's 32 KiB still fit).
                    setenv("LIMIT_BLOCKS", "128", 1)
                },
                makeRoom: { setenv("LIMIT_BLOCKS", "4096", 1) })
        }

        @Test("a full disk with no writer open (no -shm can be created): query and audit answer, ingest and replay say DATABASE_FULL, nothing changes",
              .enabled(if: Faults.canMount, "needs root and mount (tmpfs)"))
        func fullDiskKeepsAnswering() throws {
            let workspace = try Workspace(name: "full-reads")
            let disk = try Faults.SmallDisk(at: workspace.url("small"), size: "16m")
            let history = History.generate(lines: 120, seed: 0xF1111)
            let first = try workspace.write(lines: history.lines.prefix(80).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(80).map(\.text), to: "more.ndjson")
            let created = try workspace.cli("ingest", db: "small/db.sqlite", [first.path])
            #expect(created.status == 1, "\(created.stderr)")
            try workspace.cli("ingest", db: "reference.sqlite", [first.path])
            // As after the last connection closed: no -wal, no -shm (SQLite removes them then).
            try Faults.closeCleanly(workspace.path("small/db.sqlite"))
            let customers = try Probe(workspace.path("reference.sqlite")).customers()
            let reference = try answers(try workspace.engine("reference.sqlite", mode: .readOnly), customers: customers)
            let before = Tool.read(workspace.path("small/db.sqlite"))
            try Faults.fill(workspace.url("small/filler"))

            for customer in customers.prefix(5) {
                let query = try workspace.cli("query", db: "small/db.sqlite", ["--app-transaction-id", customer, "--at", "\(moments[3])"])
                #expect(query.status == 0 && query.stdout == (reference["\(customer)@\(moments[3])"] ?? "") + "\n",
                        "query on a full disk: exit \(query.status) \(query.stdout) \(query.stderr)")
            }
            let audit = try workspace.cli("audit", db: "small/db.sqlite")
            #expect(audit.status == 0 && audit.stdout.contains("\"ok\":true"), "audit on a full disk: \(audit.stdout) \(audit.stderr)")
            let library = try answers(try workspace.engine("small/db.sqlite", mode: .readOnly), customers: customers)
            #expect(library == reference, "the library on a full disk:\n\(differences(library, reference))")

            let ingest = try workspace.cli("ingest", db: "small/db.sqlite", [more.path])
            #expect(ingest.status == 3 && ingest.stderr.contains("DATABASE_FULL") && ingest.stdout.isEmpty,
                    "ingest on a full disk: exit \(ingest.status) \(ingest.stdout.prefix(200)) \(ingest.stderr)")
            let replay = try workspace.cli("replay", db: "small/db.sqlite", ["--quiet"])
            #expect(replay.status == 3 && replay.stderr.contains("DATABASE_FULL"), "replay on a full disk: exit \(replay.status) \(replay.stderr)")
            #expect(Tool.read(workspace.path("small/db.sqlite")) == before, "the database changed on a full disk")

            // Room again: everything goes on.
            try FileManager.default.removeItem(at: workspace.url("small/filler"))
            _ = disk
            let resumed = try workspace.cli("ingest", db: "small/db.sqlite", [more.path])
            #expect(resumed.status == 0 || resumed.status == 1, "\(resumed.stderr)")
            expectOutcomes(resumed.stdout, for: Array(history.lines.dropFirst(80)))
        }

        // MARK: Read-only

        /// Runs the command line as an unprivileged user when the tests run as root, so that
        /// file permissions apply.
        static let unprivilegedShell = "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$ENTITLEMENTS\" \"$@\""

        func runUnprivileged(_ arguments: [String], in workspace: Workspace) throws -> Tool.Outcome {
            if Faults.isRoot {
                return try Tool.run(arguments, in: workspace.folder, shell: Self.unprivilegedShell)
            }
            return try Tool.run(arguments, in: workspace.folder)
        }

        /// A database that cannot be written: every write is refused with exit 3 and the file is untouched.
        func expectRefusesWrites(workspace: Workspace, database: String, newInputs: URL, run: ([String]) throws -> Tool.Outcome) throws {
            let path = workspace.path(database)
            let before = Tool.read(path)
            let common = ["--db", path, "--config", workspace.configPath]
            let ingest = try run(["ingest"] + common + [newInputs.path])
            #expect(ingest.status == 3, "ingest into a read-only database: exit \(ingest.status) \(ingest.stdout.prefix(300)) \(ingest.stderr)")
            #expect(ingest.stderr.contains("DATABASE_READ_ONLY"), "\(ingest.stderr)")
            #expect(ingest.stdout.isEmpty, "a refused batch was acknowledged")
            let replay = try run(["replay"] + common + ["--quiet"])
            #expect(replay.status == 3, "replay of a read-only database: exit \(replay.status) \(replay.stderr)")
            let after = Tool.read(path)
            #expect(before == after, "a read-only database file was changed")
            print("read-only: ingest said \(ingest.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }

        @Test("a read-only database file (chmod 0444): exit 3, file untouched",
              .enabled(if: !Faults.isRoot || Faults.canDropPrivileges, "as root, needs setpriv to drop privileges"))
        func readOnlyFile() throws {
            let workspace = try Workspace(name: "readonly-file")
            let history = History.generate(lines: 60, seed: 0x0444)
            let first = try workspace.write(lines: history.lines.prefix(20).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(20).map(\.text), to: "more.ndjson")
            try workspace.cli("ingest", db: "ro.sqlite", [first.path])
            // Readable by all, writable by nobody; the folder stays writable (so -wal/-shm could be created).
            chmod(workspace.folder.path, 0o777)
            chmod(workspace.path("ro.sqlite"), 0o444)
            try expectRefusesWrites(workspace: workspace, database: "ro.sqlite", newInputs: more) { arguments in
                try runUnprivileged(arguments, in: workspace)
            }
            #expect(try Probe(workspace.path("ro.sqlite")).eventCount() == Int64(Set(history.lines.prefix(20).flatMap(\.items)).filter {
                if case .event = $0 { return true } else { return false } }.count))
        }

        @Test("a database in a read-only folder (chmod 0555): exit 3, file untouched",
              .enabled(if: !Faults.isRoot || Faults.canDropPrivileges, "as root, needs setpriv to drop privileges"))
        func readOnlyFolder() throws {
            let workspace = try Workspace(name: "readonly-folder")
            let history = History.generate(lines: 60, seed: 0x0555)
            let first = try workspace.write(lines: history.lines.prefix(20).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(20).map(\.text), to: "more.ndjson")
            try FileManager.default.createDirectory(at: workspace.url("locked"), withIntermediateDirectories: true)
            try workspace.cli("ingest", db: "locked/db.sqlite", [first.path])
            chmod(workspace.folder.path, 0o755)
            chmod(workspace.path("locked"), 0o555)
            defer { chmod(workspace.path("locked"), 0o755) }
            try expectRefusesWrites(workspace: workspace, database: "locked/db.sqlite", newInputs: more) { arguments in
                try runUnprivileged(arguments, in: workspace)
            }
        }

        @Test("a read-only file system: exit 3, nothing written; writable again, ingest resumes",
              .enabled(if: Faults.canMount, "needs root and mount (tmpfs)"))
        func readOnlyFileSystem() throws {
            let workspace = try Workspace(name: "readonly-fs")
            let disk = try Faults.SmallDisk(at: workspace.url("disk"), size: "16m")
            let history = History.generate(lines: 120, seed: 0x0F5)
            let all = try workspace.write(lines: history.lines.map(\.text), to: "all.ndjson")
            let first = try workspace.write(lines: history.lines.prefix(40).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(40).map(\.text), to: "more.ndjson")
            try workspace.cli("ingest", db: "reference.sqlite", [all.path])
            try workspace.cli("ingest", db: "disk/db.sqlite", [first.path])
            try disk.remount("ro")
            try expectRefusesWrites(workspace: workspace, database: "disk/db.sqlite", newInputs: more) { arguments in
                try Tool.run(arguments, in: workspace.folder)
            }
            for command in [["query", "--app-transaction-id", history.customers[0]], ["audit"]] {
                let read = try workspace.cli(command[0], db: workspace.path("disk/db.sqlite"), Array(command.dropFirst()))
                #expect(read.status == 0, "\(command[0]) on a read-only file system: exit \(read.status) \(read.stdout) \(read.stderr)")
            }
            try disk.remount("rw")
            let resumed = try workspace.cli("ingest", db: workspace.path("disk/db.sqlite"), [all.path])
            #expect(resumed.status == 1, "\(resumed.stderr)")
            try expectSameAsReference(workspace: workspace, database: "disk/db.sqlite", reference: "reference.sqlite", history: history)
        }

        // MARK: Missing and damaged files

        /// Every command that opens the database, with the expected exit code 3 and error code.
        func expectUnusable(
            _ workspace: Workspace, database: String, code: String, readersCode: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let input = try workspace.write(lines: History.generate(lines: 5, seed: 1).lines.map(\.text), to: "five.ndjson")
            let path = workspace.path(database)
            let before = Tool.read(path)
            let commands: [[String]] = [
                ["ingest", input.path], ["query", "--app-transaction-id", "704000000000000000"], ["replay", "--quiet"], ["audit"],
            ]
            for command in commands {
                let outcome = try Tool.run([command[0], "--db", path, "--config", workspace.configPath] + command.dropFirst(), in: workspace.folder)
                #expect(outcome.status == 3, "\(command[0]) on \(database): exit \(outcome.status) \(outcome.stdout.prefix(200)) \(outcome.stderr)",
                        sourceLocation: sourceLocation)
                let expected = command[0] == "ingest" ? code : readersCode ?? code
                #expect(outcome.stderr.contains(expected), "\(command[0]) on \(database): \(outcome.stderr)", sourceLocation: sourceLocation)
                #expect(!outcome.stdout.contains("\"appended\""), sourceLocation: sourceLocation)
            }
            let after = Tool.read(path)
            #expect(before == after, "the damaged file was changed", sourceLocation: sourceLocation)
        }

        @Test("a database in a folder that does not exist, or a folder given as the database: exit 3")
        func missingDatabase() throws {
            let workspace = try Workspace(name: "missing")
            try expectUnusable(workspace, database: "no/such/folder/db.sqlite", code: "DATABASE_UNAVAILABLE", readersCode: "DATABASE_NOT_FOUND")
            #expect(!FileManager.default.fileExists(atPath: workspace.path("no")))
            try FileManager.default.createDirectory(at: workspace.url("a-folder"), withIntermediateDirectories: true)
            try expectUnusable(workspace, database: "a-folder", code: "DATABASE_")
        }

        @Test("a file that is not a database, or a damaged one: exit 3 DATABASE_CORRUPT, file untouched")
        func corruptDatabase() throws {
            let workspace = try Workspace(name: "corrupt")
            var rng = SplitMix64(seed: 0xBAD)
            // Not a database at all.
            try Data((0..<16_384).map { _ in UInt8.random(in: 0...255, using: &rng) }).write(to: workspace.url("noise.sqlite"))
            try expectUnusable(workspace, database: "noise.sqlite", code: "DATABASE_CORRUPT")
            try Data(Scenario.pki.rootPEM.utf8).write(to: workspace.url("text.sqlite"))
            try expectUnusable(workspace, database: "text.sqlite", code: "DATABASE_CORRUPT")

            // An engine database whose pages after the first were overwritten.
            let history = History.generate(lines: 200, seed: 0xD00D)
            let input = try workspace.write(lines: history.lines.map(\.text), to: "input.ndjson")
            try workspace.cli("ingest", db: "good.sqlite", [input.path])
            // The command checkpoints before it exits: the file alone holds every event
            // (so the damage below hits them), the write-ahead log is empty or gone.
            let walSize = (try? FileManager.default.attributesOfItem(atPath: workspace.path("good.sqlite-wal"))[.size] as? Int) ?? 0
            #expect(walSize == 0)
            var bytes = Tool.read(workspace.path("good.sqlite"))
            let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
            #expect(bytes.count > 4 * pageSize)
            var damaged = bytes
            for index in pageSize..<damaged.count { damaged[index] = UInt8.random(in: 0...255, using: &rng) }
            try Data(damaged).write(to: workspace.url("damaged.sqlite"))
            try expectUnusable(workspace, database: "damaged.sqlite", code: "DATABASE_CORRUPT")

            // An engine database cut short.
            bytes.removeLast(bytes.count / 2)
            try Data(bytes).write(to: workspace.url("truncated.sqlite"))
            try expectUnusable(workspace, database: "truncated.sqlite", code: "DATABASE_")
        }
    }
}
