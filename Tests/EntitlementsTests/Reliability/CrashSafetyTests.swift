import EntitlementCore
import Entitlements
import Foundation
import Testing

extension Reliability {
    /// `kill -9` at random moments: an acknowledged input is never lost, nothing is
    /// stored twice, projections always equal a full replay.
    ///
    /// The long version: `Tests/reliability/crash-test.sh` (tens of thousands of inputs,
    /// hundreds of kills) runs this same test with larger parameters.
    @Suite("Crash safety")
    struct CrashSafety {
        @Test("ingest killed with SIGKILL at random moments, then resumed: nothing lost, nothing doubled")
        func killedIngestLosesNothing() throws {
            let inputs = parameter("RELIABILITY_CRASH_INPUTS", 2_500)
            let kills = parameter("RELIABILITY_CRASH_KILLS", 5)
            let seed = Reliability.seed(0xC0FFEE)
            let workspace = try Workspace(name: "crash")
            var clock = Date()
            func lap(_ what: String) { print("  \(what): \(String(format: "%.2f", Date().timeIntervalSince(clock)))s"); clock = Date() }
            let history = History.generate(lines: inputs, seed: seed)
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            lap("generate")

            // The reference: the same inputs, ingested once without interruption.
            let reference = try workspace.cli("ingest", db: "reference.sqlite", [file.path])
            #expect(reference.status == 1, "reference ingest: \(reference.stderr)")
            expectOutcomes(reference.stdout, for: history.lines)
            let fullRun = max(reference.seconds, 0.2)
            lap("reference")

            var rng = RNG(seed: seed ^ 0x5EED)
            var killedWhileRunning = 0
            var acknowledged: Set<String> = []
            for round in 0..<kills {
                // Vary how input arrives and how big each committed batch is.
                let batch = rng.pick(["1", "7", "64", "512"])
                let viaStdin = rng.chance(0.5)
                let running = try workspace.start(
                    "ingest", db: "crashed.sqlite", ["--batch", batch] + (viaStdin ? [] : [file.path]),
                    stdin: viaStdin ? file : nil, label: "kill\(round)")
                let delay = Double.random(in: 0.01...(fullRun * 1.2), using: &rng)
                usleep(UInt32(delay * 1_000_000))
                running.kill9()
                let outcome = running.wait()
                if outcome.signaled { killedWhileRunning += 1 }
                // Every line printed is an acknowledgment: what it acknowledged must be stored.
                let stored = try Probe(workspace.path("crashed.sqlite")).eventIds()
                for object in outputObjects(outcome.stdout) where text(object["result"]) != "rejected" {
                    guard let id = text(object["eventId"]) else { continue }
                    acknowledged.insert(id)
                    #expect(stored.contains(id), "round \(round): acknowledged \(id) is not in the log after kill -9")
                }
            }
            #expect(killedWhileRunning > 0, "no kill landed while ingest was running (runs take \(fullRun)s)")

            lap("kills")
            // Ingest the same input again, to the end.
            let resumed = try workspace.cli("ingest", db: "crashed.sqlite", [file.path])
            #expect(resumed.status == 1, "resumed ingest: \(resumed.stderr)")
            expectOutcomes(resumed.stdout, for: history.lines)
            lap("resume")
            try expectSameAsReference(workspace: workspace, database: "crashed.sqlite", reference: "reference.sqlite", history: history)
            lap("checks")
            print("crash safety: \(history.lines.count) lines, \(history.identities.count) events, \(kills) kills (\(killedWhileRunning) mid-run), \(acknowledged.count) acknowledged before the last run, seed \(seed)")
        }

        @Test("replay killed with SIGKILL before its swap leaves the previous state intact")
        func killedReplayChangesNothing() throws {
            let seed = Reliability.seed(0xBEEF)
            let workspace = try Workspace(name: "crash-replay")
            let history = History.generate(lines: parameter("RELIABILITY_REPLAY_INPUTS", 1_500), seed: seed)
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            try workspace.cli("ingest", db: "reference.sqlite", [file.path])
            try workspace.cli("ingest", db: "crashed.sqlite", [file.path])
            let replay = try workspace.cli("replay", db: "crashed.sqlite", ["--quiet"])
            #expect(replay.status == 0, "\(replay.stderr)")
            var rng = RNG(seed: seed)
            var killed = 0
            for round in 0..<parameter("RELIABILITY_REPLAY_KILLS", 4) {
                let running = try workspace.start("replay", db: "crashed.sqlite", ["--quiet"], label: "replay\(round)")
                usleep(UInt32(Double.random(in: 0.005...max(0.02, replay.seconds), using: &rng) * 1_000_000))
                running.kill9()
                if running.wait().signaled { killed += 1 }
                // Still answers, and answers the same, right after the kill.
                let customer = history.customers[round % history.customers.count]
                let query = try workspace.cli("query", db: "crashed.sqlite", ["--app-transaction-id", customer, "--at", "\(moments[2])"])
                let expected = try workspace.cli("query", db: "reference.sqlite", ["--app-transaction-id", customer, "--at", "\(moments[2])"])
                #expect(query.status == expected.status && query.stdout == expected.stdout, "after a killed replay: \(query.stdout) \(query.stderr)")
            }
            try expectSameAsReference(workspace: workspace, database: "crashed.sqlite", reference: "reference.sqlite", history: history)
            print("killed replay: \(killed) kills mid-run")
        }
    }
}
