import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// `ingest` with replicated acknowledgments (specification section 15), against a real
/// Litestream with a file replica: what is acknowledged is on the replica; what the
/// replica does not confirm is committed locally, answered `REPLICATION_TIMEOUT`, and
/// ends the ingest with exit 3.
@Suite("Replicated ingest", .serialized)
struct ReplicatedIngestTests {
    @Test("acknowledged lines are in the database restored from the replica, which audits clean", .enabled(if: Litestream.available))
    func acknowledgedLinesAreOnTheReplica() throws {
        let workspace = try Workspace(name: "replicated")
        let history = History.generate(lines: 300, seed: 0x11735)
        let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
        // The database exists before Litestream watches it (an empty ingest creates it).
        let empty = try workspace.write(lines: [], to: "empty.ndjson")
        _ = try workspace.cli("ingest", db: "live.sqlite", [empty.path])
        let litestream = try Litestream(database: workspace.path("live.sqlite"), in: workspace.folder)
        try litestream.start()
        defer { litestream.stop() }
        try workspace.addReplication(litestream.replicationSection(timeoutMs: 30_000))

        let run = try workspace.cli("ingest", db: "live.sqlite", ["--batch", "25", file.path])
        #expect(run.status == 1, "ingest (rejected lines included): \(run.stderr)")
        expectOutcomes(run.stdout, for: history.lines)
        let acknowledged = Set(outputObjects(run.stdout).compactMap { text($0["eventId"]) })
        #expect(!acknowledged.isEmpty)

        let restored = workspace.path("restored.sqlite")
        try litestream.restore(to: restored)
        let probe = try Probe(restored)
        let onReplica = try probe.eventIds()
        let lost = acknowledged.subtracting(onReplica)
        #expect(lost.isEmpty, "\(lost.count) acknowledged events are not on the replica: \(lost.prefix(3))")
        #expect(try probe.eventCount() == Int64(history.identities.count))
        let audit = try workspace.cli("audit", db: restored)
        #expect(audit.status == 0, "audit of the restored database: \(audit.stdout) \(audit.stderr)")
    }

    @Test("without Litestream: the first batch is committed locally, answered REPLICATION_TIMEOUT line by line, exit 3")
    func withoutLitestreamIngestStopsAtTheFirstBatch() throws {
        let workspace = try Workspace(name: "unreplicated")
        let plain = Tool.read(workspace.configPath)
        let history = History.generate(lines: 60, seed: 0x0DD)
        let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
        try workspace.addReplication("{\"litestream\": {\"socket\": \"\(workspace.path("nobody.sock"))\", \"timeoutMs\": 300}}")

        let run = try workspace.cli("ingest", db: "alone.sqlite", ["--batch", "10", file.path])
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("REPLICATION_TIMEOUT"))
        let lines = outputObjects(run.stdout)
        #expect(!lines.isEmpty)
        let inputs = Set(lines.compactMap { $0["input"].flatMap { if case .int(let n) = $0 { Int(n) } else { nil } } })
        #expect(inputs.min() == 1 && inputs.max()! <= 10, "the first batch only: \(inputs.sorted())")
        for line in lines {
            #expect(text(line["result"]) == "error" && text(line["error"]?["code"]) == "REPLICATION_TIMEOUT", "\(JSONWriter.string(line))")
        }
        // No checkpoint, at exit neither: the commits are still in the write-ahead log.
        let wal = (try? FileManager.default.attributesOfItem(atPath: workspace.path("alone.sqlite-wal"))[.size] as? Int) ?? 0
        #expect(wal > 0, "the -wal file was checkpointed away")

        // Nothing lost locally: sent again without replication, that batch's events are duplicates.
        try Data(plain).write(to: workspace.configURL)
        let again = try workspace.cli("ingest", db: "alone.sqlite", [file.path])
        #expect(again.status == 1, "\(again.stderr)")
        expectOutcomes(again.stdout, for: history.lines)
        let expected = history.lines.flatMap { line in line.items }
        for (object, item) in zip(outputObjects(again.stdout), expected) {
            guard case .int(let input)? = object["input"], inputs.contains(Int(input)), case .event = item else { continue }
            #expect(text(object["result"]) == "duplicate", "input \(input) was not kept: \(JSONWriter.string(object))")
        }
    }

    @Test("a database Litestream does not replicate: REPLICATION_TIMEOUT says what Litestream answered, not that it was silent",
          .enabled(if: Litestream.available))
    func databaseLitestreamDoesNotReplicate() throws {
        let workspace = try Workspace(name: "not-replicated-here")
        let empty = try workspace.write(lines: [], to: "empty.ndjson")
        _ = try workspace.cli("ingest", db: "watched.sqlite", [empty.path])
        let litestream = try Litestream(database: workspace.path("watched.sqlite"), in: workspace.folder)
        try litestream.start()
        defer { litestream.stop() }
        try workspace.addReplication(litestream.replicationSection(timeoutMs: 500))

        // --db names another file than litestream.yml's path (a typo, a relative path resolved elsewhere).
        let history = History.generate(lines: 5, seed: 0x404)
        let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
        let run = try workspace.cli("ingest", db: "elsewhere.sqlite", [file.path])
        #expect(run.status == 3, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("REPLICATION_TIMEOUT") && run.stderr.contains("database not found"), "\(run.stderr)")
        #expect(!run.stderr.contains("did not answer in time"), "\(run.stderr)")
    }

    @Test("a bad replication section is a configuration error naming the field, exit 2")
    func badReplicationConfiguration() throws {
        let workspace = try Workspace(name: "replication-config")
        let plain = Tool.read(workspace.configPath)
        let cases: [(String, String)] = [
            ("[]", "replication"),
            ("{}", "replication.litestream"),
            ("{\"litestream\": {\"timeoutMs\": 100}}", "replication.litestream.socket"),
            ("{\"litestream\": {\"socket\": \"/run/ls.sock\", \"timeoutMs\": 0}}", "replication.litestream.timeoutMs"),
            ("{\"litestream\": {\"socket\": \"/run/ls.sock\", \"timeoutMs\": \"5s\"}}", "replication.litestream.timeoutMs"),
            ("{\"litestream\": {\"socket\": \"/run/ls.sock\", \"interval\": 1}}", "replication.litestream.interval"),
            ("{\"litestream\": {\"socket\": \"/\(String(repeating: "s", count: 120))\"}}", "replication.litestream.socket"),
        ]
        let empty = try workspace.write(lines: [], to: "empty.ndjson")
        for (section, field) in cases {
            try Data(plain).write(to: workspace.configURL)
            try workspace.addReplication(section)
            let run = try workspace.cli("ingest", db: "config.sqlite", [empty.path])
            #expect(run.status == 2, "\(section): \(run.stderr)")
            #expect(run.stderr.contains(field), "\(section): \(run.stderr)")
        }
    }
}
