import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// The power is cut: whatever the kernel had not yet written to the disk is gone.
    /// An acknowledgment promises that what it acknowledged is on stable storage
    /// (specification section 18), so nothing acknowledged may be missing afterwards.
    @Suite("Power loss")
    struct PowerLoss {
        @Test("ingest on ext4 over a loop device, the power cut without a flush: nothing acknowledged is lost",
              .enabled("needs root, losetup, mkfs.ext4 and mount of a loop device") { LoopDisk.available })
        func acknowledgedIngestSurvivesPowerCut() throws {
            let seed = Scenario.seed(0x9A7E)
            let workspace = try Workspace(name: "power-loss")
            let history = History.generate(lines: parameter("RELIABILITY_POWER_INPUTS", 1_500), seed: seed)
            let disk = try LoopDisk(image: workspace.url("disk.img"), mountedAt: workspace.url("disk"))
            let database = disk.folder.appendingPathComponent("entitlements.sqlite").path

            // The inputs arrive on standard input, a few lines at a time, as a webhook relay
            // would send them: many commits, each acknowledged by its result lines.
            signal(SIGPIPE, SIG_IGN)
            let pipe = Pipe()
            let running = try Tool.start(
                ["ingest", "--db", database, "--config", workspace.configPath], in: workspace.folder, stdinPipe: pipe, label: "power")
            defer {
                if running.process.isRunning { running.kill9() }
                _ = running.wait(timeout: 30)
            }
            var rng = SplitMix64(seed: seed)
            var sentItems = 0, line = 0
            while line < history.lines.count {
                let end = min(history.lines.count, line + rng.int(1...48))
                let text = history.lines[line..<end].map { $0.text + "\n" }.joined()
                try pipe.fileHandleForWriting.write(contentsOf: Data(text.utf8))
                sentItems += history.lines[line..<end].reduce(0) { $0 + $1.items.count }
                line = end
                // Now and then the sender waits for its answers, so commits are of every size.
                if rng.chance(0.5) {
                    guard running.waitForOutput(lines: sentItems, timeout: 300) else { break }
                }
            }
            let answeredAll = running.waitForOutput(lines: sentItems, timeout: 300)
            #expect(answeredAll, "ingest did not answer all \(sentItems) items: \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self))")

            // The cut. Standard input stays open, so the process waits for more and neither
            // exits nor checkpoints (which would sync); nothing else syncs the file system. The
            // disk as it is now is the backing image: with `--direct-io=on`, every write the
            // loop device has completed is in that file, and what ext4 still holds in its page
            // cache (written by the process, not yet written back or synced) is not. A copy of
            // the image taken now, while the file system is mounted, is the disk after a power
            // cut at this moment. (It keeps every write the device completed; a real disk with a
            // volatile cache could lose some of those too, which only fsync's cache flush
            // protects against, and the engine's commits rely on that flush alike.)
            let acknowledgments = outputObjects(String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self))
            // Power back on: the copy is mounted (ext4 replays its journal) and the engine
            // opens the database on it (SQLite recovers from its WAL).
            let after = try disk.cutPower(under: running, snapshot: workspace.url("after-cut.img"), mountAt: workspace.url("after-cut"))
            let recovered = after.folder.appendingPathComponent("entitlements.sqlite").path
            let audit = try Tool.run(["audit", "--db", recovered, "--config", workspace.configPath], in: workspace.folder)
            #expect(audit.status == 0, "audit after the cut: exit \(audit.status) \(audit.stdout.prefix(400)) \(audit.stderr)")

            let stored = Set(try Probe(recovered).identities())
            let quarantined = try Probe(recovered).quarantineCount()
            let sent = history.lines.flatMap(\.items)
            var acknowledgedEvents = 0, lost: [String] = [], rejectedLines = Set<String>(), lastCustomer: String?
            var index = 0
            for inputLine in history.lines {
                for item in inputLine.items {
                    defer { index += 1 }
                    guard index < acknowledgments.count else { break }
                    let object = acknowledgments[index]
                    switch item {
                    case .event(let identity):
                        acknowledgedEvents += 1
                        if !stored.contains(identity) { lost.append(identity) }
                        if let customer = text(object["appTransactionId"]) { lastCustomer = customer }
                    case .rejected:
                        rejectedLines.insert(inputLine.text)
                    }
                }
            }
            #expect(acknowledgments.count == sent.count, "\(acknowledgments.count) acknowledgments for \(sent.count) items")
            #expect(acknowledgedEvents > 0)
            #expect(lost.count == 0, "\(lost.count) of \(acknowledgedEvents) acknowledged events lost in the power cut, e.g. \(lost.prefix(3))")
            #expect(quarantined >= Int64(rejectedLines.count), "\(quarantined) quarantined after the cut, \(rejectedLines.count) rejected lines acknowledged")
            // The customer acknowledged last is there for the engine's queries.
            if let lastCustomer {
                let query = try Tool.run(
                    ["query", "--db", recovered, "--config", workspace.configPath, "--app-transaction-id", lastCustomer], in: workspace.folder)
                #expect(query.status == 0 && query.stdout.contains(lastCustomer), "query \(lastCustomer) after the cut: exit \(query.status) \(query.stdout.prefix(300)) \(query.stderr)")
            }
            print("power loss: \(acknowledgedEvents) acknowledged events, \(lost.count) lost after the cut, \(stored.count) events on the disk, seed \(seed)")
        }
    }
}
