import EntitlementCore
import Entitlements
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// The power is cut: whatever the kernel had not yet written to the disk is gone.
    /// An acknowledgment promises that what it acknowledged is on stable storage
    /// (contract section 18), so nothing acknowledged may be missing afterwards.
    @Suite("Power loss")
    struct PowerLoss {
        @Test("ingest on ext4 over a loop device, the power cut without a flush: nothing acknowledged is lost",
              .enabled("needs root, losetup, mkfs.ext4 and mount of a loop device") { LoopDisk.available })
        func acknowledgedIngestSurvivesPowerCut() throws {
            let seed = Reliability.seed(0x9A7E)
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
            var rng = RNG(seed: seed)
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
            let snapshot = workspace.url("after-cut.img")
            try disk.snapshot(to: snapshot)
            running.kill9()
            _ = running.wait(timeout: 30)
            disk.detach()

            // Power back on: the snapshot is mounted (ext4 replays its journal) and the engine
            // opens the database on it (SQLite recovers from its WAL).
            let after = try LoopDisk(attaching: snapshot, mountedAt: workspace.url("after-cut"))
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

        @Test("serve on ext4 over a loop device, the power cut without a flush: no notification answered 200 is lost",
              .enabled("needs root, losetup, mkfs.ext4 and mount of a loop device") { LoopDisk.available })
        func acknowledgedNotificationsSurvivePowerCut() throws {
            let workspace = try Workspace(name: "power-loss-serve")
            let count = parameter("RELIABILITY_POWER_NOTIFICATIONS", 400)
            let first = 90_000
            let bodies = (0..<count).map { ServeSamples.notification(first + $0) }
            let disk = try LoopDisk(image: workspace.url("disk.img"), mountedAt: workspace.url("disk"))
            let database = disk.folder.appendingPathComponent("served.sqlite").path
            let running = try Tool.start(
                ["serve", "--db", database, "--config", workspace.configPath, "--listen", "127.0.0.1:0"], in: workspace.folder, label: "serve")
            defer {
                if running.process.isRunning { running.kill9() }
                _ = running.wait(timeout: 30)
            }
            guard let port = ServeLoad.port(of: running) else {
                Issue.record("serve did not start: \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self))")
                return
            }
            // Apple's deliveries, several at once: the server commits those that arrive
            // together as one batch, with one sync.
            let acknowledged = Locked<[Int]>([])
            let clients = 8
            DispatchQueue.concurrentPerform(iterations: clients) { client in
                for index in stride(from: client, to: count, by: clients) {
                    guard let response = try? RawClient.exchange(port: port, "POST", "/notifications", body: bodies[index]) else { continue }
                    if response.status == 200 && response.text.contains("\"appended\"") { acknowledged.withLock { $0.append(index) } }
                }
            }
            let answered = acknowledged.withLock { $0 }
            #expect(answered.count == count, "\(answered.count) of \(count) notifications answered 200 appended")

            // The cut, as in the test above: the server idles, nothing has synced since its
            // last commit, and the image is copied as the device holds it.
            let snapshot = workspace.url("after-cut.img")
            try disk.snapshot(to: snapshot)
            running.kill9()
            _ = running.wait(timeout: 30)
            disk.detach()

            let after = try LoopDisk(attaching: snapshot, mountedAt: workspace.url("after-cut"))
            let recovered = after.folder.appendingPathComponent("served.sqlite").path
            let audit = try Tool.run(["audit", "--db", recovered, "--config", workspace.configPath], in: workspace.folder)
            #expect(audit.status == 0, "audit after the cut: exit \(audit.status) \(audit.stdout.prefix(400)) \(audit.stderr)")
            let stored = Set(try Probe(recovered).identities())
            let lost = answered.filter { !stored.contains("notification:5e000000-0000-4000-8000-\(String(format: "%012d", first + $0))") }
            #expect(lost.count == 0, "\(lost.count) of \(answered.count) notifications answered 200 lost in the power cut")
            if let last = answered.last {
                let query = try Tool.run(
                    ["query", "--db", recovered, "--config", workspace.configPath, "--app-transaction-id", ServeSamples.customer(first + last)],
                    in: workspace.folder)
                #expect(query.status == 0, "query after the cut: exit \(query.status) \(query.stdout.prefix(300)) \(query.stderr)")
            }
            print("power loss (serve): \(answered.count) notifications answered 200, \(lost.count) lost after the cut, \(stored.count) events on the disk")
        }
    }

    /// An ext4 file system on a loop device backed by an image file, mounted at a folder;
    /// unmounted and detached when released.
    final class LoopDisk {
        let folder: URL
        private var device: String?

        /// Whether loop devices can be made and mounted here; when not, prints why.
        static let available: Bool = {
            guard let reason = unavailability() else { return true }
            print("Power loss tests skipped: \(reason)")
            return false
        }()

        private static func unavailability() -> String? {
            guard Faults.isRoot else { return "not running as root" }
            for tool in ["/usr/sbin/losetup", "/usr/sbin/mkfs.ext4", "/usr/bin/mount", "/usr/bin/umount"]
            where !FileManager.default.isExecutableFile(atPath: tool) && !FileManager.default.isExecutableFile(atPath: tool.replacingOccurrences(of: "/usr", with: "")) {
                return "\(tool) is not installed (util-linux, e2fsprogs)"
            }
            let probe = FileManager.default.temporaryDirectory.appendingPathComponent("loop-probe-\(UUID().uuidString.prefix(8))")
            try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: probe) }
            do {
                let disk = try LoopDisk(image: probe.appendingPathComponent("probe.img"), mountedAt: probe.appendingPathComponent("mnt"), size: "8M")
                disk.detach()
                return nil
            } catch {
                return "\(error)"
            }
        }

        /// Makes an image of `size`, an ext4 file system on it, and mounts it at `folder`.
        convenience init(image: URL, mountedAt folder: URL, size: String = "256M") throws {
            try Self.run("truncate -s \(size) '\(image.path)'")
            try Self.run("mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 '\(image.path)'")
            try self.init(attaching: image, mountedAt: folder)
        }

        /// Attaches the image `image` to a loop device that writes straight to it (no page
        /// cache of its own in between) and mounts it at `folder`.
        init(attaching image: URL, mountedAt folder: URL) throws {
            self.folder = folder
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let device = try Self.output("losetup --direct-io=on --find --show '\(image.path)'")
            self.device = device
            do {
                try Self.run("mount -t ext4 '\(device)' '\(folder.path)'")
            } catch {
                Faults.sh("losetup -d '\(device)'")
                self.device = nil
                throw error
            }
        }

        /// Copies the backing image as the device holds it now, without syncing anything.
        func snapshot(to target: URL) throws {
            guard let device else { throw Faults.Failure(description: "the loop disk is detached") }
            let backing = try Self.output("losetup --noheadings --output BACK-FILE '\(device)'")
            try Self.run("cp --sparse=always '\(backing)' '\(target.path)'")
        }

        /// Unmounts (lazily) and detaches the loop device.
        func detach() {
            guard let device else { return }
            Faults.sh("umount -l '\(folder.path)'")
            Faults.sh("losetup -d '\(device)'")
            self.device = nil
        }

        deinit { detach() }

        private static func run(_ command: String) throws {
            let status = Faults.sh(command)
            guard status == 0 else { throw Faults.Failure(description: "\(command) failed (exit \(status))") }
        }

        /// The command's standard output, trimmed.
        private static func output(_ command: String) throws -> String {
            let process = Process()
            let out = Pipe()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            process.standardOutput = out
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard process.terminationStatus == 0, !text.isEmpty else {
                throw Faults.Failure(description: "\(command) failed (exit \(process.terminationStatus))")
            }
            return text
        }
    }
}
