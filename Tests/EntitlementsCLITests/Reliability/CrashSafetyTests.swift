import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

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
            let inputs = parameter("RELIABILITY_CRASH_INPUTS", 2_000)
            let kills = parameter("RELIABILITY_CRASH_KILLS", 5)
            let seed = Scenario.seed(0xC0FFEE)
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
            lap("reference")

            // Kill rounds. Like a webhook sender, each round resends from the first line that was
            // not acknowledged (with some overlap, so duplicates arrive too); kills are timed to
            // land throughout the input, and a few rounds start over from the very beginning.
            var rng = SplitMix64(seed: seed ^ 0x5EED)
            var killedWhileRunning = 0
            var acknowledged: Set<String> = []
            var nextLine = 0
            for round in 0..<kills {
                // Once everything was acknowledged, rounds resend from anywhere (all duplicates then).
                let finished = nextLine >= history.lines.count
                let start = finished ? rng.int(0...(history.lines.count - 1)) : rng.chance(0.15) ? 0 : max(0, nextLine - rng.int(0...50))
                let chunk = try workspace.write(lines: history.lines[start...].map(\.text), to: "round.ndjson")
                let batch = rng.pick(["1", "7", "64", "512"])
                let viaStdin = rng.chance(0.5)
                let running = try workspace.start(
                    "ingest", db: "crashed.sqlite", ["--batch", batch] + (viaStdin ? [] : [chunk.path]),
                    stdin: viaStdin ? chunk : nil, label: "kill\(round)")
                // Each kill waits for an event, not a time: the process has acknowledged a chosen
                // number of items (spread so kills land throughout the input; kills also land
                // between acknowledgments, a little after one). However slow the machine, the
                // kill then lands while the process runs.
                func count(_ lines: ArraySlice<InputLine>) -> Int { lines.reduce(0) { $0 + $1.items.count } }
                let resume = min(max(start, nextLine), history.lines.count)
                let overlap = count(history.lines[start..<resume]), after = count(history.lines[resume...])
                let share = Double(after) * 0.7 / Double(max(1, kills - round)) * Double.random(in: 0.3...1.7, using: &rng)
                let planned = finished ? rng.int(1...max(1, overlap + after - 1)) : overlap + Int(share)
                let target = max(1, min(overlap + after - 1, planned))
                let reached = running.waitForOutput(lines: target)
                let extra = round == 0 ? 0 : rng.int(0...5)
                if reached && extra > 0 { usleep(UInt32(extra * 1_000)) }
                let delay = Date().timeIntervalSince(running.started)
                running.kill9()
                let outcome = running.wait()
                if outcome.signaled { killedWhileRunning += 1 }
                // Every line printed is an acknowledgment: what it acknowledged must be stored. The
                // k-th result line answers the k-th item sent, so each acknowledgment names the
                // event's identity (eventIds are not unique: every renewal-info version of a
                // subscription shares one).
                let results = outputObjects(outcome.stdout)
                let stored = Set(try Probe(workspace.path("crashed.sqlite")).identities())
                let sent = history.lines[start...].flatMap(\.items)
                #expect(results.count <= sent.count, "round \(round): more acknowledgments than items sent")
                for (object, item) in zip(results, sent) {
                    switch item {
                    case .event(let identity):
                        #expect(["appended", "duplicate"].contains(text(object["result"]) ?? ""), "round \(round): \(JSONWriter.string(object)) for \(identity)")
                        acknowledged.insert(identity)
                        #expect(stored.contains(identity), "round \(round): acknowledged \(identity) is not in the log after kill -9")
                    case .rejected(let code):
                        #expect(text(object["error"]?["code"]) == code, "round \(round): \(JSONWriter.string(object)), expected \(code)")
                    }
                }
                // The first line not acknowledged: resend from there next round.
                var items = 0, line = start
                while line < history.lines.count, items + history.lines[line].items.count <= results.count {
                    items += history.lines[line].items.count
                    line += 1
                }
                nextLine = max(nextLine, line)
                if ProcessInfo.processInfo.environment["RELIABILITY_VERBOSE"] != nil {
                    print("  round \(round): lines \(start)..., batch \(batch)\(viaStdin ? " stdin" : ""), killed after \(String(format: "%.2f", delay))s, acknowledged up to line \(line)\(outcome.signaled ? "" : " (had finished)")")
                }
            }
            #expect(killedWhileRunning > 0, "no kill landed while ingest was running (a run takes \(reference.seconds)s)")
            #expect(!acknowledged.isEmpty, "no round acknowledged anything before its kill")
            lap("kills")
            // Ingest the same input again, to the end.
            let resumed = try workspace.cli("ingest", db: "crashed.sqlite", [file.path])
            #expect(resumed.status == 1, "resumed ingest: \(resumed.stderr)")
            expectOutcomes(resumed.stdout, for: history.lines)
            lap("resume")
            try expectFeedConsistent(workspace: workspace, database: "crashed.sqlite", customers: try Probe(workspace.path("reference.sqlite")).customers())
            try expectSameAsReference(workspace: workspace, database: "crashed.sqlite", reference: "reference.sqlite", history: history)
            lap("checks")
            print("crash safety: \(history.lines.count) lines, \(history.identities.count) events, \(kills) kills (\(killedWhileRunning) mid-run), \(nextLine) lines acknowledged before the last run, seed \(seed)")
        }

        @Test("replay killed with SIGKILL before its swap leaves the previous state intact")
        func killedReplayChangesNothing() throws {
            let seed = Scenario.seed(0xBEEF)
            let workspace = try Workspace(name: "crash-replay")
            let history = History.generate(lines: parameter("RELIABILITY_REPLAY_INPUTS", 1_000), seed: seed)
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            try workspace.cli("ingest", db: "reference.sqlite", [file.path])
            try workspace.cli("ingest", db: "crashed.sqlite", [file.path])
            let replay = try workspace.cli("replay", db: "crashed.sqlite", ["--quiet"])
            #expect(replay.status == 0, "\(replay.stderr)")
            var rng = SplitMix64(seed: seed)
            var killed = 0, killedBuilding = 0
            let rounds = parameter("RELIABILITY_REPLAY_KILLS", 4)
            for round in 0..<rounds {
                let running = try workspace.start("replay", db: "crashed.sqlite", ["--quiet"], label: "replay\(round)")
                // Within the time a whole replay takes (process start included), so the kills land in it.
                usleep(UInt32(Double.random(in: 0.05...0.8, using: &rng) * max(0.05, replay.seconds) * 1_000_000))
                running.kill9()
                let outcome = running.wait()
                if outcome.signaled {
                    killed += 1
                } else {
                    #expect(outcome.status == 0, "replay round \(round): exit \(outcome.status) \(outcome.stderr)")
                }
                // Killed after it began writing the next generation, before its swap.
                let current = try Probe(workspace.path("crashed.sqlite")).int("SELECT generation FROM engine_state")
                if try Probe(workspace.path("crashed.sqlite")).int("SELECT count(*) FROM projections_next WHERE generation > \(current)") > 0 {
                    killedBuilding += 1
                }
                // Still answers, and answers the same, right after the kill.
                let customer = history.customers[round % history.customers.count]
                let query = try workspace.cli("query", db: "crashed.sqlite", ["--app-transaction-id", customer, "--at", "\(moments[2])"])
                let expected = try workspace.cli("query", db: "reference.sqlite", ["--app-transaction-id", customer, "--at", "\(moments[2])"])
                #expect(query.status == expected.status && query.stdout == expected.stdout, "after a killed replay: \(query.stdout) \(query.stderr)")
            }
            #expect(killed > 0, "no kill landed while a replay was running (a replay takes \(replay.seconds)s)")
            try expectSameAsReference(workspace: workspace, database: "crashed.sqlite", reference: "reference.sqlite", history: history)
            print("killed replay: \(killed) of \(rounds) kills mid-run, \(killedBuilding) while the next generation was being written")
        }
    }
}
