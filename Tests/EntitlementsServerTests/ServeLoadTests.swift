import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestSupport
import TestPKI
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// Many clients at once, and the server process killed under load.
    @Suite("Serve: load, kill -9, SIGTERM")
    struct ServeLoad {
        /// Runs `body(i)` on `count` threads of their own at once, waiting (bounded) for all.
        static func concurrently(_ count: Int, timeout: Double = 300, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
            let group = DispatchGroup()
            for index in 0..<count {
                group.enter()
                let thread = Thread {
                    body(index)
                    group.leave()
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
            return group.wait(timeout: .now() + timeout) == .success
        }

        @Test("64 concurrent clients mixing notifications, duplicates and queries: nothing lost or doubled, batched, equal to a replay")
        func sixtyFourClients() throws {
            let clients = 64
            let perClient = 5
            let server = try TestServer(name: "serve-load")
            let bodies = (0..<(clients * perClient)).map { ServeSamples.notification(1000 + $0) }
            let failures = Locked<[String]>([])
            let acknowledged = Locked<[String: Int]>([:])
            let finished = Self.concurrently(clients) { client in
                func fail(_ text: String) { failures.withLock { $0.append("client \(client): \(text)") } }
                guard let connection = try? RawClient(port: server.port) else { return fail("cannot connect") }
                for step in 0..<perClient {
                    let n = client * perClient + step
                    connection.send(RawClient.request("POST", "/notifications", body: Array(bodies[n].utf8)))
                    guard let answer = connection.response(), answer.status == 200, answer.json?["result"] == "appended" else {
                        return fail("notification \(n) not appended")
                    }
                    acknowledged.withLock { $0["5e000000-0000-4000-8000-\(String(format: "%012d", 1000 + n))", default: 0] += 1 }
                    // The customer just acknowledged is there, from any connection.
                    connection.send(RawClient.request("GET", "/customers/\(ServeSamples.customer(1000 + n))"))
                    guard connection.response()?.json?["appTransactionId"] == .string(ServeSamples.customer(1000 + n)) else {
                        return fail("customer \(n) not found after its acknowledgment")
                    }
                    if step > 0 {
                        // A retry of an earlier one (Apple retries): duplicate.
                        connection.send(RawClient.request("POST", "/notifications", body: Array(bodies[n - 1].utf8)))
                        guard connection.response()?.json?["result"] == "duplicate" else { return fail("retry of \(n - 1) not a duplicate") }
                    }
                    connection.send(RawClient.request("GET", "/customers?originalTransactionId=\(ServeSamples.originalTransactionId(1000 + n))"))
                    guard connection.response()?.status == 200 else { return fail("query by originalTransactionId \(n)") }
                }
            }
            #expect(finished)
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
            let acks = acknowledged.withLock { $0 }
            #expect(acks.count == clients * perClient)
            #expect(acks.values.allSatisfy { $0 == 1 })
            let statistics = server.server.ingestStatistics
            #expect(server.stop())
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            let ids = try probe.strings("SELECT event_id FROM events")
            #expect(ids.count == clients * perClient, "events stored")
            #expect(Set(ids) == Set(acks.keys), "the log holds exactly what was acknowledged")
            // Requests arriving together were committed together.
            #expect(statistics.batches < statistics.items, "\(statistics)")
            print("serve load: \(statistics.items) items in \(statistics.batches) batches")
            let replay = try server.engine.replay()
            #expect(replay.changed == 0, "projections built under load differ from a replay for \(replay.changed) customers")
            #expect(replay.events == Int64(clients * perClient))
        }

        /// The port of a started `serve`, from its `{"listening": ...}` line (bounded wait for that event).
        static func port(of running: Tool.Running, timeout: Double = 60) -> Int? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let text = String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self)
                if let line = text.split(separator: "\n").first, let json = try? JSONParser().parse(Array(line.utf8)),
                    case .string(let address)? = json["listening"], let port = address.split(separator: ":").last.flatMap({ Int($0) })
                {
                    return port
                }
                if !running.process.isRunning { return nil }
                usleep(10_000)
            }
            return nil
        }

        /// ``port(of:timeout:)``, recording an issue with serve's standard error when there is none.
        static func reportedPort(of running: Tool.Running) -> Int? {
            guard let port = port(of: running) else {
                Issue.record("serve did not report its port: \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self))")
                return nil
            }
            return port
        }

        @Test("refuses to listen beyond loopback without a token (exit 2); bad serve settings are named")
        func refusesWithoutToken() throws {
            let workspace = try Workspace(name: "serve-refuse")
            let refused = try workspace.cli("serve", db: "s.sqlite", ["--listen", "0.0.0.0:0"])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("serve.token"))
            #expect(!FileManager.default.fileExists(atPath: workspace.path("s.sqlite")))
            let malformed = try workspace.cli("serve", db: "s.sqlite", ["--listen", "nowhere"])
            #expect(malformed.status == 2)
            var config = try JSONParser().parse(Array(Data(contentsOf: workspace.configURL)))
            if case .object(var object) = config {
                object["serve"] = ["listen": "127.0.0.1:notaport"]
                config = .object(object)
            }
            try Data(JSONWriter.string(config).utf8).write(to: workspace.configURL)
            let badConfig = try workspace.cli("serve", db: "s.sqlite", [])
            #expect(badConfig.status == 2)
            #expect(badConfig.stderr.contains("serve.listen"))
        }

        @Test("SIGTERM: stops accepting, finishes the request it was reading, checkpoints, exits 0")
        func sigterm() throws {
            let workspace = try Workspace(name: "serve-term")
            let running = try workspace.start("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"], label: "serve")
            guard let port = Self.reportedPort(of: running) else {
                running.kill9()
                return
            }
            let body = Array(ServeSamples.notification(501).utf8)
            let client = try RawClient(port: port)
            client.send(Array("POST /notifications HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body.prefix(100))
            let idle = try RawClient(port: port)
            idle.send(RawClient.request("GET", "/health"))
            #expect(idle.response()?.status == 200)
            // The server has read the first request's head before the signal (it answers nothing until the body is complete).
            #expect(TestServer.eventually { String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self).contains("/health") })
            kill(running.pid, SIGTERM)
            #expect(idle.closedByServer(within: 30))  // an idle keep-alive connection is closed
            client.send(Array(body.dropFirst(100)))
            let answer = client.response()
            #expect(answer?.status == 200)
            #expect(answer?.json?["result"] == "appended")
            #expect(answer?.field("connection") == "close")
            let outcome = running.wait(timeout: 60)
            #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.stderr)")
            #expect((try? RawClient(port: port)) == nil, "still accepting after SIGTERM")
            let wal = (try? FileManager.default.attributesOfItem(atPath: workspace.path("s.sqlite") + "-wal")[.size] as? Int) ?? 0
            #expect(wal == 0, "checkpointed before exit")
            #expect(try Probe(workspace.path("s.sqlite")).eventCount() == 1)
        }

        @Test("kill -9 under load, restart, re-send everything unacknowledged: the log equals a reference ingest")
        func killedUnderLoad() throws {
            let lines = parameter("SERVE_KILL_LINES", 360)
            let clients = 8
            let workspace = try Workspace(name: "serve-kill")
            let history = History.generate(lines: lines, seed: Scenario.seed(0x5E12E))
            let file = try workspace.write(lines: history.lines.map(\.text), to: "inputs.ndjson")
            let reference = try workspace.cli("ingest", db: "reference.sqlite", [file.path])
            #expect(reference.status == 1, "reference ingest: \(reference.stderr)")

            let acknowledged = Locked<Set<Int>>([])
            /// Sends the lines `indexes` (shared out among the clients) until the server stops answering.
            func send(_ indexes: [Int], port: Int, killAfter: Int?, running: Tool.Running) {
                let next = Locked(0)
                let killed = Locked(false)
                let pid = running.pid
                _ = Self.concurrently(clients) { _ in
                    guard let connection = try? RawClient(port: port) else { return }
                    while true {
                        let position = next.withLock { value -> Int in
                            defer { value += 1 }
                            return value
                        }
                        guard position < indexes.count else { return }
                        let index = indexes[position]
                        guard connection.send(RawClient.request("POST", "/transactions", body: Array(history.lines[index].text.utf8))),
                            let answer = connection.response(timeout: 60), answer.status == 200
                        else { return }
                        let count = acknowledged.withLock { set -> Int in
                            set.insert(index)
                            return set.count
                        }
                        if let killAfter, count >= killAfter {
                            killed.withLock { done in
                                if !done {
                                    kill(pid, SIGKILL)
                                    done = true
                                }
                            }
                        }
                    }
                }
            }

            let first = try workspace.start("serve", db: "served.sqlite", ["--listen", "127.0.0.1:0"], label: "serve1")
            guard let port1 = Self.port(of: first) else {
                Issue.record("serve did not start")
                first.kill9()
                return
            }
            send(Array(history.lines.indices), port: port1, killAfter: history.lines.count / 3, running: first)
            let killed = first.wait(timeout: 60)
            #expect(killed.signaled, "the server was killed")
            let before = acknowledged.withLock { $0.count }
            #expect(before >= history.lines.count / 3 && before < history.lines.count, "\(before) acknowledged before the kill")

            let second = try workspace.start("serve", db: "served.sqlite", ["--listen", "127.0.0.1:0"], label: "serve2")
            guard let port2 = Self.port(of: second) else {
                Issue.record("serve did not restart: \(String(decoding: Tool.read(second.stderrURL.path), as: UTF8.self))")
                second.kill9()
                return
            }
            let unacknowledged = history.lines.indices.filter { index in !acknowledged.withLock { $0.contains(index) } }
            send(unacknowledged, port: port2, killAfter: nil, running: second)
            #expect(acknowledged.withLock { $0.count } == history.lines.count)
            kill(second.pid, SIGTERM)
            let stopped = second.wait(timeout: 60)
            #expect(stopped.status == 0 && !stopped.signaled)
            try expectSameAsReference(workspace: workspace, database: "served.sqlite", reference: "reference.sqlite", history: history)
        }
    }
}
