import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// `serve --read-only`: a read replica (contract section 15).
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

            kill(running.pid, SIGTERM)
            let outcome = running.wait(timeout: 60)
            stopped = true
            #expect(outcome.status == 0, "serve --read-only exit \(outcome.status): \(outcome.stderr.suffix(500))")
            #expect(Tool.read(database) == before, "the served database changed")
            let filesAfter = try FileManager.default.contentsOfDirectory(atPath: workspace.path("replica")).sorted()
            #expect(filesAfter == filesBefore, "files appeared beside the served database: \(filesAfter)")
        }
    }
}
