import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// `serve --read-only`: a read replica (specification section 15).
    @Suite("Serve: a read replica (--read-only)")
    struct ReadReplica {
        @Test("serve --read-only on a read-only copy: queries answer, writes get 503 READ_ONLY_REPLICA, X-Log-Head and /health report the head, nothing is written",
              .enabled(if: !Faults.isRoot || Faults.canDropPrivileges, "as root, needs setpriv to drop privileges"))
        func readOnlyServe() throws {
            let workspace = try Workspace(name: "read-replica")
            let history = History.generate(lines: 40, seed: 0x0EAD)
            let input = try workspace.write(lines: history.lines.map(\.text), to: "history.ndjson")
            let ingest = try workspace.cli("ingest", db: "primary.sqlite", [input.path])
            #expect(ingest.status == 0 || ingest.status == 1, "\(ingest.stderr)")
            let (head, customer, lastReceived): (Int64, String, Int64) = try {
                let probe = try Probe(workspace.path("primary.sqlite"))
                return (
                    try probe.int("SELECT max(seq) FROM events"), try #require(try probe.customers().first),
                    try probe.int("SELECT received_at FROM events ORDER BY seq DESC LIMIT 1"))
            }()
            #expect(head > 0)

            // The copy: a file nobody may write, in a folder nobody may write (as root, served as another user).
            try FileManager.default.createDirectory(at: workspace.url("replica"), withIntermediateDirectories: true)
            let database = try workspace.copyDatabase(workspace.path("primary.sqlite"), to: "replica/db.sqlite")
            try? FileManager.default.removeItem(atPath: database + "-wal")
            chmod(workspace.folder.path, 0o755)
            chmod(database, 0o444)
            chmod(workspace.path("replica"), 0o555)
            defer { chmod(workspace.path("replica"), 0o755) }
            let before = Tool.read(database)
            let filesBefore = try FileManager.default.contentsOfDirectory(atPath: workspace.path("replica")).sorted()

            let arguments = ["serve", "--db", database, "--config", workspace.configPath, "--listen", "127.0.0.1:0", "--read-only"]
            let running =
                Faults.isRoot
                ? try Tool.start(arguments, in: workspace.folder, shell: "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$ENTITLEMENTS\" \"$@\"")
                : try Tool.start(arguments, in: workspace.folder)
            var stopped = false
            defer { if !stopped { running.kill9(); _ = running.wait(timeout: 30) } }
            #expect(running.waitForOutput(lines: 1, timeout: 120), "serve --read-only did not start: \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self))")
            let listening = try #require(try? JSONParser().parse(Tool.read(running.stdoutURL.path).split(separator: 0x0A).first.map(Array.init) ?? []))
            let address = try #require(text(listening["listening"]))
            let port = try #require(Int(address.split(separator: ":").last ?? ""))

            func expectHead(_ response: RawClient.Response, _ what: String) {
                #expect(response.field("x-log-head") == String(head), "\(what): X-Log-Head \(response.field("x-log-head") ?? "missing")")
            }
            let query = try RawClient.exchange(port: port, "GET", "/customers/\(customer)")
            #expect(query.status == 200, "\(query.text)")
            expectHead(query, "GET /customers")
            let changes = try RawClient.exchange(port: port, "GET", "/changes?since=0&limit=5")
            #expect(changes.status == 200, "\(changes.text)")
            #expect(!changes.text.isEmpty)
            expectHead(changes, "GET /changes")
            let lifecycle = try RawClient.exchange(port: port, "GET", "/lifecycle?since=0&limit=5")
            #expect(lifecycle.status == 200, "\(lifecycle.text)")
            expectHead(lifecycle, "GET /lifecycle")
            let missing = try RawClient.exchange(port: port, "GET", "/nowhere")
            #expect(missing.status == 404)
            expectHead(missing, "GET /nowhere")

            let health = try RawClient.exchange(port: port, "GET", "/health")
            #expect(health.status == 200, "\(health.text)")
            expectHead(health, "GET /health")
            let healthJSON = try #require(health.json, "\(health.text)")
            #expect(healthJSON["ok"] == .bool(true))
            #expect(healthJSON["head"] == .int(head))
            if case .int(let age) = healthJSON["ageMs"] {
                #expect(age >= 0 && age <= Engine.now() - lastReceived + 1, "ageMs \(age)")
            } else {
                Issue.record("/health without ageMs: \(health.text)")
            }

            for target in ["/notifications", "/transactions"] {
                let write = try RawClient.exchange(port: port, "POST", target, body: history.lines[0].text)
                #expect(write.status == 503, "POST \(target): \(write.status) \(write.text)")
                #expect(text(write.json?["error"]?["code"]) == "READ_ONLY_REPLICA" || write.text.contains("READ_ONLY_REPLICA"), "\(write.text)")
                #expect(write.text.contains("read replica"), "\(write.text)")
                #expect(write.field("retry-after") != nil)
                expectHead(write, "POST \(target)")
            }

            // The answers the HTTP layer makes on its own, to requests it could not take, carry the head too.
            let tooLarge = try RawClient.exchange(port: port, "POST", "/notifications", headers: ["Content-Length: 999999999"])
            #expect(tooLarge.status == 413, "\(tooLarge.text)")
            expectHead(tooLarge, "a body over the limit")
            for (what, bytes) in [("a malformed request line", "NONSENSE\r\n\r\n"), ("HTTP/9.9", "GET /health HTTP/9.9\r\nHost: test\r\n\r\n")] {
                let client = try RawClient(port: port)
                client.send(bytes)
                let answer = try #require(client.response(), "no answer to \(what)")
                #expect(answer.status == 400 || answer.status == 505, "\(what): \(answer.status) \(answer.text)")
                expectHead(answer, what)
            }

            kill(running.pid, SIGTERM)
            let outcome = running.wait(timeout: 60)
            stopped = true
            #expect(outcome.status == 0, "serve --read-only exit \(outcome.status): \(outcome.stderr.suffix(500))")
            #expect(Tool.read(database) == before, "the served database changed")
            let filesAfter = try FileManager.default.contentsOfDirectory(atPath: workspace.path("replica")).sorted()
            #expect(filesAfter == filesBefore, "files appeared beside the served database: \(filesAfter)")
        }

        /// A copy with Litestream's `PATH-txid` beside it is read as immutable by the read-only
        /// commands, even as its owner: no `-wal` or `-shm` appears (they would hold a follower's
        /// lock). Once promoted (a writer ingests into it), the readers see the new events.
        @Test("read-only commands on a followed copy (PATH-txid) create no -wal or -shm, as its owner too; a promoted copy is read whole")
        func followedCopyWithoutSideFiles() throws {
            let workspace = try Workspace(name: "followed-copy")
            let history = History.generate(lines: 40, seed: 0x7C1D)
            let first = try workspace.write(lines: history.lines.prefix(20).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(20).map(\.text), to: "more.ndjson")
            let ingest = try workspace.cli("ingest", db: "primary.sqlite", [first.path])
            #expect(ingest.status == 0 || ingest.status == 1, "\(ingest.stderr)")
            let copy = try workspace.copyDatabase(workspace.path("primary.sqlite"), to: "copy.sqlite")
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + suffix) }
            #expect(FileManager.default.createFile(atPath: copy + "-txid", contents: Data("0000000000000007\n".utf8)))
            func head(_ arguments: [String] = []) throws -> Int64? {
                let audit = try workspace.cli("audit", db: "copy.sqlite", arguments)
                #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
                if case .int(let seq)? = outputObjects(audit.stdout).last?["headSeq"] { return seq }
                return nil
            }
            let before = try head()
            #expect(before != nil && before! > 0)
            for suffix in ["-wal", "-shm"] {
                #expect(!FileManager.default.fileExists(atPath: copy + suffix), "\(copy)\(suffix) was created by a read-only command on a followed copy")
            }
            // Promoted: a writer appends, and the readers see it although PATH-txid was left behind.
            let promoted = try workspace.cli("ingest", db: "copy.sqlite", [more.path])
            #expect(promoted.status == 0 || promoted.status == 1, "\(promoted.stderr)")
            let primaryAgain = try workspace.cli("ingest", db: "primary.sqlite", [more.path])
            #expect(primaryAgain.status == 0 || primaryAgain.status == 1, "\(primaryAgain.stderr)")
            let primaryAudit = try workspace.cli("audit", db: "primary.sqlite")
            let primaryHead = outputObjects(primaryAudit.stdout).last?["headSeq"]
            let after = try head()
            #expect(after.map { JSONValue.int($0) } == primaryHead, "the promoted copy's head \(after.map(String.init) ?? "none"), the primary's \(String(describing: primaryHead))")
            #expect(after != before)
        }

        /// Served as another user than Litestream's: the server may only read the file.
        @Test("serve --read-only on a Litestream follower (restore -f), as another user: X-Log-Head and /health advance as the primary ingests",
              .enabled(if: !Faults.isRoot || Faults.canDropPrivileges, "as root, needs setpriv to serve as another user"))
        func litestreamFollower() throws {
            guard Litestream.available else {
                print("notice: litestream is not installed: the read replica test with a real Litestream follower is skipped")
                return
            }
            guard Faults.isRoot else {
                print("notice: serving a Litestream follower as another user needs root (and setpriv); this run serves it as its own user only")
                return
            }
            try followerScenario(asAnotherUser: true)
        }

        /// Served as the follower's own user (as root, or as the user Litestream runs as): the
        /// server's readers take no lock on the followed copy and create no `-wal` or `-shm`
        /// beside it, so `restore -f` keeps applying while it answers.
        @Test("serve --read-only on a Litestream follower as Litestream's own user: the follower is not blocked, no -wal or -shm appears")
        func litestreamFollowerSameUser() throws {
            guard Litestream.available else {
                print("notice: litestream is not installed: the read replica test with a real Litestream follower (same user) is skipped")
                return
            }
            try followerScenario(asAnotherUser: false)
        }

        private func followerScenario(asAnotherUser: Bool) throws {
            let workspace = try Workspace(name: asAnotherUser ? "read-replica-follower" : "read-replica-follower-own")
            let history = History.generate(lines: 60, seed: 0xF011)
            let first = try workspace.write(lines: history.lines.prefix(30).map(\.text), to: "first.ndjson")
            let more = try workspace.write(lines: history.lines.dropFirst(30).map(\.text), to: "more.ndjson")
            let primary = workspace.path("primary.sqlite")
            let firstIngest = try workspace.cli("ingest", db: "primary.sqlite", [first.path])
            #expect(firstIngest.status == 0 || firstIngest.status == 1, "\(firstIngest.stderr)")
            let litestream = try Litestream(database: primary, in: workspace.folder, syncInterval: "100ms")
            try litestream.start()
            defer { litestream.stop() }
            try workspace.addReplication(litestream.replicationSection(timeoutMs: 30_000))
            // The primary's head as `audit` reads it (read-only: nothing that could checkpoint behind Litestream's back).
            func primaryHead() throws -> Int64 {
                let audit = try workspace.cli("audit", db: "primary.sqlite")
                let line = try #require(outputObjects(audit.stdout).last, "audit: \(audit.stdout) \(audit.stderr)")
                guard case .int(let head) = line["headSeq"] else { throw Faults.Failure(description: "audit printed no headSeq: \(audit.stdout)") }
                return head
            }
            let firstHead = try primaryHead()

            // The follower: another process keeps its copy up to date from the file replica.
            let follower = workspace.path("follower.sqlite")
            let follow = Process()
            follow.executableURL = URL(fileURLWithPath: try #require(Litestream.executable))
            follow.arguments = ["restore", "-config", litestream.configPath, "-f", "-follow-interval", "100ms", "-o", follower, primary]
            follow.environment = Litestream.environment
            let followLog = workspace.url("follow.log")
            #expect(FileManager.default.createFile(atPath: followLog.path, contents: nil))
            let followHandle = try FileHandle(forWritingTo: followLog)
            follow.standardOutput = followHandle
            follow.standardError = followHandle
            try follow.run()
            defer {
                if follow.isRunning { kill(follow.processIdentifier, SIGTERM) }
                follow.waitUntilExit()
            }
            func followLogText() -> String { String(decoding: Tool.read(followLog.path), as: UTF8.self) }
            // Restored, and following: Litestream keeps PATH-txid beside the copy it follows.
            let restored = TestDeadline.wait(seconds: 60) {
                FileManager.default.fileExists(atPath: follower) && FileManager.default.fileExists(atPath: follower + "-txid")
            }
            try #require(restored, "litestream restore -f made no database: \(followLogText())")

            chmod(workspace.folder.path, 0o755)
            let serveArguments = ["serve", "--db", follower, "--config", workspace.configPath, "--listen", "127.0.0.1:0", "--read-only"]
            let running =
                asAnotherUser
                ? try Tool.start(
                    serveArguments, in: workspace.folder, shell: "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$ENTITLEMENTS\" \"$@\"",
                    label: "replica")
                : try Tool.start(serveArguments, in: workspace.folder, label: "replica")
            var stopped = false
            defer { if !stopped { running.kill9(); _ = running.wait(timeout: 30) } }
            #expect(running.waitForOutput(lines: 1, timeout: 120), "serve --read-only did not start: \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self))")
            let listening = try #require(try? JSONParser().parse(Tool.read(running.stdoutURL.path).split(separator: 0x0A).first.map(Array.init) ?? []))
            let port = try #require(Int(text(listening["listening"])?.split(separator: ":").last ?? ""))
            func replicaHead() -> Int64? {
                guard let health = try? RawClient.exchange(port: port, "GET", "/health"), health.status == 200,
                    case .int(let head) = health.json?["head"], health.field("x-log-head") == String(head)
                else { return nil }
                return head
            }
            #expect(TestDeadline.wait(seconds: 60) { replicaHead() == firstHead }, "the replica's head \(replicaHead().map(String.init) ?? "none"), the primary's \(firstHead): \(followLogText())")

            // The primary ingests (each batch acknowledged once Litestream has it); the replica follows.
            let moreIngest = try workspace.cli("ingest", db: "primary.sqlite", [more.path])
            #expect(moreIngest.status == 0 || moreIngest.status == 1, "\(moreIngest.stderr)")
            let secondHead = try primaryHead()
            #expect(secondHead > firstHead)
            #expect(TestDeadline.wait(seconds: 60) { replicaHead() == secondHead }, "the replica's head \(replicaHead().map(String.init) ?? "none") did not reach the primary's \(secondHead): \(followLogText())")
            let write = try RawClient.exchange(port: port, "POST", "/transactions", body: history.lines[0].text)
            #expect(write.status == 503 && write.text.contains("READ_ONLY_REPLICA"), "\(write.text)")
            // The copy was read without SQLite's side files: nothing the follower would wait for.
            for suffix in ["-wal", "-shm"] {
                #expect(!FileManager.default.fileExists(atPath: follower + suffix), "\(follower)\(suffix) appeared beside the followed copy")
            }
            let query = try RawClient.exchange(port: port, "GET", "/changes?since=0&limit=5")
            #expect(query.status == 200 && query.field("x-log-head") == String(secondHead), "\(query.status) \(query.text)")

            kill(running.pid, SIGTERM)
            let outcome = running.wait(timeout: 60)
            stopped = true
            #expect(outcome.status == 0, "serve --read-only exit \(outcome.status): \(outcome.stderr.suffix(500))")
        }
    }
}

/// Waits, with a deadline, until a condition holds.
enum TestDeadline {
    static func wait(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}
