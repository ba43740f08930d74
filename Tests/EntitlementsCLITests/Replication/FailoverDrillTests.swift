import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// The failover drill (specification section 15): `ingest` with replicated acknowledgments
/// and Litestream are both killed with SIGKILL at a random moment under load; the
/// database restored from the replica (a folder, or a bucket on an S3-compatible server
/// on loopback) must audit clean and hold every acknowledged event.
/// `scripts/failover-drill.sh` runs it with more trials.
@Suite("Failover drill", .serialized)
struct FailoverDrillTests {
    @Test(
        "kill -9 of ingest and Litestream at random moments, restore from the replica: no acknowledged line lost",
        .enabled(if: Litestream.available), arguments: ["file", "s3"])
    func acknowledgedLinesSurviveTheLossOfTheMachine(replica kind: String) throws {
        var moto: MotoServer? = nil
        if kind == "s3" {
            guard MotoServer.available else { return }
            moto = try MotoServer(in: Scenario.temporaryFolder("moto"))
        }
        defer { moto?.stop() }
        let trials = parameter("REPLICATION_DRILL_TRIALS", 2)
        // The drill's control: the same runs without replicated acknowledgments, to show that
        // it can see a loss (acknowledged events missing from the replica are then expected).
        let control = parameter("REPLICATION_DRILL_CONTROL", 0) != 0
        let lines = parameter("REPLICATION_DRILL_LINES", 300)
        let seed = Scenario.seed(0xD811)
        var rng = SplitMix64(seed: seed)
        let history = History.generate(lines: lines, seed: seed)
        let itemCount = history.lines.reduce(0) { $0 + $1.items.count }
        var totalAcknowledged = 0
        var totalLost = 0
        for trial in 0..<trials {
            let workspace = try Workspace(name: "drill")
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            let empty = try workspace.write(lines: [], to: "empty.ndjson")
            _ = try workspace.cli("ingest", db: "live.sqlite", [empty.path])
            let replica: Litestream.Replica = moto.map { .s3(endpoint: $0.endpoint, bucket: $0.bucket, prefix: "trial-\(trial)-\(UUID().uuidString.prefix(6))") } ?? .file
            let litestream = try Litestream(database: workspace.path("live.sqlite"), in: workspace.folder, replica: replica)
            try litestream.start()
            defer { litestream.stop() }
            if !control { try workspace.addReplication(litestream.replicationSection(timeoutMs: 30_000)) }

            // Small batches, so that the kill lands between many commits and confirmations.
            let ingest = try workspace.start("ingest", db: "live.sqlite", ["--batch", "4", file.path], label: "drill")
            let killAfter = 1 + Int(rng.next() % UInt64(max(1, itemCount * 3 / 4)))
            _ = ingest.waitForOutput(lines: killAfter, timeout: 300)
            // Both die, in a random order, as with the loss of the machine.
            if rng.next() % 2 == 0 {
                ingest.kill9()
                litestream.kill9()
            } else {
                litestream.kill9()
                ingest.kill9()
            }
            _ = ingest.wait(timeout: 60)

            // What was acknowledged: the complete lines printed before the kill.
            let output = String(decoding: Tool.read(ingest.stdoutURL.path), as: UTF8.self)
            let complete = output.hasSuffix("\n") ? output : String(output[..<(output.lastIndex(of: "\n") ?? output.startIndex)])
            let acknowledged = Set(outputObjects(complete).compactMap { text($0["eventId"]) })

            let restored = workspace.path("restored.sqlite")
            try litestream.restore(to: restored)
            let audit = try workspace.cli("audit", db: restored)
            #expect(audit.status == 0, "trial \(trial): audit of the restored database: \(audit.stdout) \(audit.stderr)")
            let onReplica = try Probe(restored).eventIds()
            let lost = acknowledged.subtracting(onReplica)
            #expect(control || lost.isEmpty, "trial \(trial): \(lost.count) acknowledged events lost: \(lost.prefix(3))")
            totalAcknowledged += acknowledged.count
            totalLost += lost.count
            print("failover drill (\(kind)\(control ? ", control without replication" : "")) trial \(trial): killed after \(killAfter) lines, \(acknowledged.count) acknowledged events, \(onReplica.count) on the replica, \(lost.count) lost")
        }
        print("failover drill (\(kind)\(control ? ", control without replication" : "")): \(trials) trials, \(totalAcknowledged) acknowledged events, \(totalLost) acknowledged-but-lost (seed \(seed))")
    }
}
