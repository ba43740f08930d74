import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// Several processes ingest overlapping inputs into one database at once, while
    /// queries keep being answered: no event lost or doubled, no SQLITE_BUSY reaches
    /// anyone as a failure, and the state equals a replay.
    @Suite("Concurrent writers")
    struct ConcurrentWriters {
        @Test("writers racing on one fresh database lose nothing, double nothing; queries answer throughout")
        func racingWritersLoseAndDoubleNothing() throws {
            let seed = Scenario.seed(0xD1CE)
            let writerCount = parameter("RELIABILITY_WRITERS", 4)
            let workspace = try Workspace(name: "race")
            let history = History.generate(lines: parameter("RELIABILITY_RACE_INPUTS", 1_200), seed: seed)
            let all = try workspace.write(lines: history.lines.map(\.text), to: "all.ndjson")
            let reference = try workspace.cli("ingest", db: "reference.sqlite", [all.path])
            #expect(reference.status == 1, "\(reference.stderr)")

            // Each writer gets an overlapping share (every line goes to all writers but one), in its own order.
            var rng = SplitMix64(seed: seed)
            var shares: [[InputLine]] = []
            for writer in 0..<writerCount {
                var share = history.lines.enumerated().filter { writerCount == 1 || $0.offset % writerCount != writer }.map(\.element)
                share.shuffle(using: &rng)
                shares.append(share)
            }
            var writers: [(Tool.Running, [InputLine])] = []
            for (writer, share) in shares.enumerated() {
                let file = try workspace.write(lines: share.map(\.text), to: "writer\(writer).ndjson")
                let viaStdin = writer % 2 == 1
                let batch = ["16", "64", "512", "3"][writer % 4]
                writers.append((
                    try workspace.start(
                        "ingest", db: "shared.sqlite", ["--batch", batch] + (viaStdin ? [] : [file.path]),
                        stdin: viaStdin ? file : nil, label: "writer\(writer)"),
                    share))
            }

            // Queries while the writers write: each answers (0, or 1 for a customer not known yet).
            var answered = 0
            var queryFailures: [String] = []
            while writers.contains(where: { $0.0.process.isRunning }) {
                // Counted when the query starts while a writer runs (the first one always does):
                // whether the writers finish before it answers depends only on scheduling.
                let overlapping = writers.contains(where: { $0.0.process.isRunning })
                let customer = rng.pick(history.customers)
                let query = try workspace.cli("query", db: "shared.sqlite", ["--app-transaction-id", customer], timeout: 60)
                let parsed = try? JSONParser().parse(query.stdout)
                if (query.status == 0 && parsed?["appTransactionId"] != nil)
                    || (query.status == 1 && text(parsed?["error"]?["code"]) == "NOT_FOUND")
                {
                    if overlapping { answered += 1 }
                } else {
                    queryFailures.append("exit \(query.status): \(query.stdout) \(query.stderr)")
                }
            }
            #expect(queryFailures.isEmpty, "queries failed while writers wrote: \(queryFailures.prefix(3))")
            #expect(answered > 0, "no query was answered while the writers were writing")

            for (index, (running, share)) in writers.enumerated() {
                let outcome = running.wait()
                // Exit 1 exactly when the writer's share holds a rejected item.
                let rejects = share.contains { $0.items.contains { if case .rejected = $0 { return true } else { return false } } }
                #expect(outcome.status == (rejects ? 1 : 0) && !outcome.signaled, "writer \(index) exit \(outcome.status): \(outcome.stderr)")
                #expect(!outcome.stderr.contains("DATABASE") && !outcome.stderr.lowercased().contains("locked")
                        && !outcome.stderr.lowercased().contains("busy"), "writer \(index): \(outcome.stderr)")
                expectOutcomes(outcome.stdout, for: share)
            }
            try expectSameAsReference(workspace: workspace, database: "shared.sqlite", reference: "reference.sqlite", history: history)
            print("concurrent writers: \(writerCount) writers, \(history.lines.count) lines, \(answered) queries answered meanwhile")
        }

        @Test("a writer finding the database locked past the busy timeout retries, and neither fails nor loses a line")
        func lockedDatabaseIsWaitedForNotReported() throws {
            // A short busy timeout, so that a lock held past it is a matter of moments.
            let busyTimeout = 200
            let workspace = try Workspace(name: "busy", busyTimeoutMilliseconds: busyTimeout)
            let history = History.generate(lines: 40, seed: 7)
            let first = try workspace.write(lines: Array(history.lines.prefix(10)).map(\.text), to: "first.ndjson")
            let rest = try workspace.write(lines: Array(history.lines.dropFirst(10)).map(\.text), to: "rest.ndjson")
            try workspace.cli("ingest", db: "busy.sqlite", [first.path])

            // Another writer holds the write lock longer than the engine's busy timeout.
            let holder = try Connection(path: workspace.path("busy.sqlite"), mode: .readWrite)
            try holder.execute("BEGIN IMMEDIATE")
            let ingest = try workspace.start("ingest", db: "busy.sqlite", [rest.path])
            let query = try workspace.start("query", db: "busy.sqlite", ["--app-transaction-id", history.customers[0]])
            let queryOutcome = query.wait(timeout: 30)
            #expect(queryOutcome.status == 0, "a query must not wait for a writer: \(queryOutcome.stderr)")
            // Waiting for the lock would have meant waiting past the busy timeout again and again
            // (and failing after 50 tries): anything clearly below that answered without waiting,
            // however loaded the machine.
            #expect(queryOutcome.seconds < 9, "a query waited \(queryOutcome.seconds)s for the write lock")
            // The event under test is the ingest meeting the lock and waiting past its busy timeout.
            // It has the database open (then meets the lock within moments), and is still running
            // ten busy timeouts later: it retries, it did not give up. Nothing races here: the
            // ingest cannot finish while the lock is held, whatever the load.
            let opened = ingest.waitUntil(timeout: 120) { ingest.hasOpen(workspace.path("busy.sqlite")) }
            #expect(opened, "ingest never opened the database")
            let gaveUp = ingest.waitForExit(timeout: 10 * Double(busyTimeout) / 1000)
            #expect(!gaveUp, "ingest gave up while the database was locked")
            try holder.execute("COMMIT")
            let outcome = ingest.wait(timeout: 60)
            let rejects = history.lines.dropFirst(10).contains { $0.items.contains { if case .rejected = $0 { return true } else { return false } } }
            #expect(outcome.status == (rejects ? 1 : 0), "exit \(outcome.status): \(outcome.stderr)")
            #expect(!outcome.stderr.contains("DATABASE"), "\(outcome.stderr)")
            expectOutcomes(outcome.stdout, for: Array(history.lines.dropFirst(10)))
            #expect(try Probe(workspace.path("busy.sqlite")).eventCount() == Int64(history.identities.count))
        }
    }
}
