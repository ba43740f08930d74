import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// `kill -9` during ingest and the lifecycle feed (specification section 12): a lifecycle
    /// event is recorded in the transaction of the batch that caused it, so a kill can
    /// neither lose a recorded id nor record one twice, and resuming records the rest.
    @Suite("Crash safety: the lifecycle feed")
    struct LifecycleCrash {
        /// Each recorded id and its cursor.
        static func recorded(_ workspace: Workspace, _ database: String) throws -> [String: String] {
            var ids: [String: String] = [:]
            for row in try Probe(workspace.path(database)).strings("SELECT id || ' ' || cursor FROM lifecycle") {
                let parts = row.split(separator: " ")
                #expect(ids[String(parts[0])] == nil, "\(parts[0]) recorded twice")
                ids[String(parts[0])] = String(parts[1])
            }
            return ids
        }

        @Test("ingest killed with SIGKILL mid-run: no recorded lifecycle id is lost or doubled; resumed, every event of the data is recorded")
        func killedIngestKeepsTheFeed() throws {
            let seed = Scenario.seed(0x11FEC7C1E)
            let workspace = try Workspace(name: "lifecycle-crash")
            let history = History.generate(lines: parameter("RELIABILITY_LIFECYCLE_INPUTS", 600), seed: seed)
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            let items = history.lines.reduce(0) { $0 + $1.items.count }
            var rng = SplitMix64(seed: seed ^ 0x5EED)
            var seen: [String: String] = [:]
            var killedWhileRunning = 0
            for round in 0..<4 {
                let running = try workspace.start(
                    "ingest", db: "crashed.sqlite", ["--batch", rng.pick(["1", "7", "64"]), file.path], label: "lifecycle\(round)")
                // The kill waits for an event (a number of acknowledgments), not a time.
                let reached = running.waitForOutput(lines: max(1, items * (round + 1) / 6))
                if reached { usleep(UInt32(rng.int(0...3) * 1_000)) }
                running.kill9()
                if running.wait().signaled { killedWhileRunning += 1 }
                let now = try Self.recorded(workspace, "crashed.sqlite")
                for (id, cursor) in seen {
                    #expect(now[id] == cursor, "round \(round): \(id) was recorded at cursor \(cursor), now \(now[id] ?? "missing")")
                }
                seen = now
            }
            #expect(killedWhileRunning > 0, "no kill landed while ingest was running")
            let resumed = try workspace.cli("ingest", db: "crashed.sqlite", [file.path])
            #expect(resumed.status == 1, "resumed ingest: \(resumed.stderr)")

            let engine = try workspace.engine("crashed.sqlite", mode: .existing)
            let now = Engine.now()
            let all = try engine.lifecycle(since: 0, recordingDueAt: now)
            let final = try Self.recorded(workspace, "crashed.sqlite")
            #expect(final.count == all.count)
            for (id, cursor) in seen { #expect(final[id] == cursor, "\(id) lost or moved after the resumed ingest") }
            var derived = Set<String>()
            for key in try Probe(workspace.path("crashed.sqlite")).customers() {
                derived.formUnion(try engine.derivedLifecycle(of: key).filter { $0.effectiveAt <= now }.map(\.id))
            }
            #expect(!derived.isEmpty)
            let missing = derived.subtracting(final.keys)
            #expect(missing.isEmpty, "events of the data never recorded: \(missing.sorted().prefix(5))")
        }
    }
}
