import EntitlementCore
import EventStore
import Foundation
import HTTPServer
import Testing
import TestSupport
import TestPKI

import Entitlements
@testable import EntitlementsServer

#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// Specification section 18 for `serve`: connections bounded per client and in total with idle ones
    /// shed first and `503` with `Retry-After` at once past the bounds (on accept, never after a wait),
    /// accepting that backs off when descriptors run out, a SIGTERM that ends within seconds,
    /// `503`s that reveal nothing; and the real defaults (256 connections, 10 s idle), IPv6.
    @Suite("Serve: connection bounds, shutdown, defaults")
    struct ServeBounds {
        static let token = "a-long-random-serve-token"
        static var bearer: String { "Authorization: Bearer \(token)" }

        /// Connections open in the server now.
        static func active(_ server: TestServer) -> Int { server.server.http.activeConnections }

        @Test("1,000 idle sockets from one address: a token holder's query and Apple's webhook are still served at once")
        func idleFlood() throws {
            let server = try TestServer(name: "serve-idle-flood", token: Self.token)
            var idle: [RawClient] = []
            for _ in 0..<1000 { idle.append(try RawClient(port: server.port)) }
            // Right behind them (before any idle timeout could free a slot), from the same address.
            // A customer the webhook's notification does not create: the answer is 404 whichever
            // of the two requests the server takes first.
            let query = try RawClient(port: server.port)
            query.send(RawClient.request("GET", "/customers/\(ServeSamples.customer(2))", headers: [Self.bearer]))
            let webhook = try RawClient(port: server.port)
            webhook.send(RawClient.request("POST", "/notifications", body: Array(ServeSamples.notification(1).utf8)))
            #expect(query.response(timeout: 9)?.status == 404)
            #expect(webhook.response(timeout: 9)?.json?["result"] == "appended")
            // Idle connections were shed for newer ones: never more than the bound for one address.
            #expect(Self.active(server) <= 64)
        }

        @Test("300 slow bodies on the public webhook from one address: 503 with Retry-After at once past its bound; another address still served")
        func slowBodyFlood() throws {
            let server = try TestServer(name: "serve-slow-flood", token: Self.token)
            var slow: [RawClient] = []
            for _ in 0..<300 {
                let client = try RawClient(port: server.port)
                client.send("POST /notifications HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{\"signedPayload\":")
                slow.append(client)
            }
            // Past its bound (64) each is answered at once, not left in the backlog.
            let refused = TestServer.eventually { server.logLines.filter { $0["status"] == 503 }.count >= 300 - 64 }
            #expect(refused, "\(server.logLines.filter { $0["status"] == 503 }.count) answered 503")
            let last = slow[299].response(timeout: 10)
            #expect(last?.status == 503)
            #expect(last?.field("retry-after") != nil)
            #expect(last?.json?["error"]?["code"] == "SERVER_BUSY")
            // The same address again, with the token or without: over its bound with nothing idle, 503.
            let query = try RawClient(port: server.port)
            query.send(RawClient.request("GET", "/customers/\(ServeSamples.customer(2))", headers: [Self.bearer]))
            #expect(query.response(timeout: 10)?.status == 503)
            let anonymous = try RawClient(port: server.port)
            anonymous.send(RawClient.request("GET", "/health"))
            #expect(anonymous.response(timeout: 10)?.status == 503)
            // Apple, from another address, is served as usual.
            let webhook = try RawClient(port: server.port, from: "127.0.0.2")
            webhook.send(RawClient.request("POST", "/notifications", body: Array(ServeSamples.notification(2).utf8)))
            #expect(webhook.response(timeout: 10)?.json?["result"] == "appended")
        }

        @Test("the default cap: 256 busy connections from four addresses; the next gets 503 at once, before it sends anything")
        func defaultCap() throws {
            let server = try TestServer(name: "serve-cap")
            var busy: [RawClient] = []
            for index in 0..<256 {
                let client = try RawClient(port: server.port, from: "127.0.0.\(2 + index / 64)")
                client.send("GET /health HTTP/1.1\r\n")  // a head begun: not idle
                busy.append(client)
            }
            #expect(TestServer.eventually { Self.active(server) == 256 })
            // Silent: the answer can only be the one given on accept (the idle timeout is 10 s).
            let next = try RawClient(port: server.port, from: "127.0.0.9")
            let refused = next.response(timeout: 5)
            #expect(refused?.status == 503)
            #expect(refused?.field("retry-after") != nil)
            #expect(next.closedByServer(within: 5))
            // Apple's webhook too: past the bound, it is told to retry.
            let webhook = try RawClient(port: server.port, from: "127.0.0.9")
            webhook.send(RawClient.request("POST", "/notifications", body: Array(ServeSamples.notification(3).utf8)))
            #expect(webhook.response(timeout: 5)?.status == 503)
            // One finishes and leaves: room again.
            busy[0].send("Host: t\r\nConnection: close\r\n\r\n")
            #expect(busy[0].response(timeout: 10)?.status == 200)
            busy.removeFirst()
            #expect(TestServer.eventually { Self.active(server) == 255 })
            #expect(try RawClient.exchange(port: server.port, "GET", "/health").status == 200)
        }

        @Test("at the total bound with every connection mid-request: 32 slow clients from eight addresses, those over 20 get 503 with Retry-After at once")
        func totalBoundSlowClients() throws {
            let server = try TestServer(name: "serve-total-slow") { options in
                options.limits.maxConnections = 20
                options.limits.maxConnectionsPerClient = 4
            }
            var slow: [RawClient] = []
            for index in 0..<32 {
                let client = try RawClient(port: server.port, from: "127.0.0.\(2 + index / 4)")
                client.send("GET /health HTTP/1.1\r\n")  // never finished
                slow.append(client)
            }
            for client in slow[20...] {
                let answer = client.response(timeout: 5)
                #expect(answer?.status == 503)
                #expect(answer?.field("retry-after") != nil)
                #expect(answer?.json?["error"]?["code"] == "SERVER_BUSY")
                #expect(client.closedByServer(within: 5))
            }
            #expect(Self.active(server) == 20)
            // One of the 20 finishing is served.
            slow[0].send("Host: t\r\n\r\n")
            #expect(slow[0].response(timeout: 10)?.status == 200)
        }

        @Test("the default idle timeout: a silent connection is closed after 10 s, not long before")
        func defaultIdleTimeout() throws {
            let server = try TestServer(name: "serve-idle-default")
            let started = Date()
            let silent = try RawClient(port: server.port)
            #expect(silent.closedByServer(within: 60))
            let elapsed = Date().timeIntervalSince(started)
            #expect(elapsed >= 9.5 && elapsed < 60, "closed after \(elapsed) s")
        }

        @Test("SIGTERM with a client stuck mid-body: serve exits 0 within seconds, the stuck request gets 503")
        func sigtermSlowClient() throws {
            let workspace = try Workspace(name: "serve-term-slow")
            let running = try workspace.start("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"], label: "serve")
            guard let port = ServeLoad.reportedPort(of: running) else {
                running.kill9()
                return
            }
            let stuck = try RawClient(port: port)
            stuck.send("POST /notifications HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n{\"signedPayload\":")
            // A byte every half second: never idle for the idle timeout (10 s), the body never whole (60 s allowed).
            let trickling = Locked(true)
            let fd = stuck.fd
            let trickler = Thread {
                var byte = UInt8(ascii: "a")
                for _ in 0..<240 where trickling.withLock({ $0 }) {
                    guard send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else { break }
                    usleep(500_000)
                }
            }
            trickler.start()
            defer { trickling.withLock { $0 = false } }
            let answered = try RawClient(port: port)
            answered.send(RawClient.request("GET", "/health"))
            #expect(answered.response()?.status == 200)
            let signalled = Date()
            kill(running.pid, SIGTERM)
            let answer = stuck.response(timeout: 30)
            #expect(answer?.status == 503)
            #expect(answer?.json?["error"]?["code"] == "SHUTTING_DOWN")
            // The body timeout is 60 s: only the shutdown grace (5 s) can end it this soon.
            let outcome = running.wait(timeout: 30)
            #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.stderr)")
            #expect(Date().timeIntervalSince(signalled) < 20)
            #expect(try Probe(workspace.path("s.sqlite")).eventCount() == 0)
        }

        @Test("SIGTERM while another process holds the database's write lock: serve exits 0 within seconds, the waiting webhook gets 503")
        func sigtermWhileLocked() throws {
            // A busy timeout far longer than the bound below: only an abandoned wait ends this soon.
            let workspace = try Workspace(name: "serve-term-locked", busyTimeoutMilliseconds: 120_000)
            let running = try workspace.start("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"], label: "serve")
            guard let port = ServeLoad.reportedPort(of: running) else {
                running.kill9()
                return
            }
            // The connection is the server's before the stop (a request answered on it), so the
            // webhook sent on it next is a complete request the server must answer.
            let client = try RawClient(port: port)
            client.send(RawClient.request("GET", "/health"))
            #expect(client.response()?.status == 200)
            let holder = try Connection(path: workspace.path("s.sqlite"), mode: .readWrite)
            try holder.execute("BEGIN IMMEDIATE")
            var released = false
            defer { if !released { try? holder.execute("ROLLBACK") } }
            client.send(RawClient.request("POST", "/notifications", body: Array(ServeSamples.notification(61).utf8)))
            let signalled = Date()
            kill(running.pid, SIGTERM)
            // Waiting for the lock, or meeting it after the stop began: either way, no wait.
            let answer = client.response(timeout: 60)
            #expect(answer?.status == 503, "\(answer?.text ?? "no answer")")
            #expect(answer?.field("retry-after") != nil)
            let outcome = running.wait(timeout: 90)
            #expect(outcome.status == 0 && !outcome.signaled, "\(outcome.stderr.suffix(500))")
            #expect(Date().timeIntervalSince(signalled) < 20, "serve took \(Date().timeIntervalSince(signalled)) s to stop")
            try holder.execute("COMMIT")
            released = true
            #expect(try Probe(workspace.path("s.sqlite")).eventCount() == 0)
        }

        @Test("a 503 for a database that cannot be written tells the caller a code, not a path; the detail goes to standard error")
        func unavailableSaysLess() throws {
            let error = EngineError(code: "STORAGE_FAILED", message: "cannot write /var/lib/secret/place/entitlements.sqlite: disk I/O error")
            let response = ServeAPI.unavailable(error)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.status == 503)
            #expect(response.fields.contains { $0.name == "Retry-After" })
            #expect(text.contains("STORAGE_FAILED"))
            #expect(!text.contains("/var/lib"), "\(text)")
            #expect(!text.contains("disk I/O"), "\(text)")
            guard Faults.canMount else {
                print("serve 503 text on a full disk: skipped, this machine cannot mount a small tmpfs")
                return
            }
            let workspace = try Workspace(name: "serve-full-text")
            let disk = try Faults.SmallDisk(at: workspace.url("disk"), size: "2m")
            let server = try TestServer(database: "disk/serve.sqlite", workspace: workspace)
            #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(52)).status == 200)
            let filler = disk.folder.appendingPathComponent("filler").path
            let fd = open(filler, O_WRONLY | O_CREAT, 0o644)
            let block = [UInt8](repeating: 0, count: 4096)
            while write(fd, block, block.count) > 0 {}
            close(fd)
            let refused = try server.exchange("POST", "/notifications", body: ServeSamples.notification(53))
            #expect(refused.status == 503)
            #expect(!refused.text.contains(workspace.folder.path), "\(refused.text)")
            #expect(!refused.text.contains("/"), "\(refused.text)")
            try FileManager.default.removeItem(atPath: filler)
        }

        @Test("serve listens on IPv6 loopback ([::1]:PORT)")
        func ipv6() throws {
            guard Self.hasIPv6Loopback() else {
                print("serve on [::1]: skipped, this machine has no IPv6 loopback")
                return
            }
            let workspace = try Workspace(name: "serve-ipv6")
            let running = try workspace.start("serve", db: "s.sqlite", ["--listen", "[::1]:0"], label: "serve")
            defer { running.kill9() }
            guard let port = ServeLoad.reportedPort(of: running) else { return }
            #expect(String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self).contains("[::1]:\(port)"))
            let answer = Self.exchangeIPv6(port: port, "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            #expect(answer.contains(#"{"ok":true}"#))
            kill(running.pid, SIGTERM)
            #expect(running.wait(timeout: 30).status == 0)
        }

        @Test("out of file descriptors (RLIMIT_NOFILE lowered): accepting backs off instead of spinning, and recovers")
        func outOfDescriptors() throws {
            let workspace = try Workspace(name: "serve-emfile")
            let limit = 64
            let running = try Tool.start(
                ["serve", "--db", "s.sqlite", "--config", workspace.configPath, "--listen", "127.0.0.1:0"], in: workspace.folder,
                shell: "ulimit -n \(limit) && exec \"$ENTITLEMENTS\" \"$@\"", label: "serve")
            defer { running.kill9() }
            guard let port = ServeLoad.reportedPort(of: running) else { return }
            // More connections than descriptors, each with a head begun (busy: none can be shed).
            var clients: [RawClient] = []
            for index in 0..<(limit + 20) {
                let client = try RawClient(port: port, from: "127.0.0.\(2 + index / 32)")
                client.send("GET /health HTTP/1.1\r\n")
                clients.append(client)
            }
            let full = TestServer.eventually { Self.descriptors(running.pid) >= limit - 1 }
            #expect(full, "the server holds \(Self.descriptors(running.pid)) descriptors")
            // Its CPU time over two seconds with the listening socket readable and no descriptor to accept with.
            let before = Self.cpuTicks(running.pid)
            let window = Date()
            usleep(2_000_000)
            let used = Double(Self.cpuTicks(running.pid) - before) / Double(sysconf(Int32(_SC_CLK_TCK)))
            let seconds = Date().timeIntervalSince(window)
            print("serve out of descriptors: \(used) s of CPU in \(seconds) s")
            #expect(used < 0.15 * seconds, "serve used \(used) s of CPU in \(seconds) s while out of descriptors")
            // Descriptors come back: it accepts again.
            clients.removeAll()
            var served = false
            let deadline = Date().addingTimeInterval(30)
            while !served && Date() < deadline {
                served = (try? RawClient.exchange(port: port, "GET", "/health").status) == 200
            }
            #expect(served)
            kill(running.pid, SIGTERM)
            #expect(running.wait(timeout: 30).status == 0)
        }

        @Test("serve.maxConnections, serve.maxConnectionsPerClient and serve.trustedProxies in the configuration; bad values are named (exit 2)")
        func configuredBounds() throws {
            let settings = try ServeSettings(configuration: JSONParser().parse(Array(#"{"serve":{"maxConnections":40,"maxConnectionsPerClient":2}}"#.utf8)))
            #expect(settings.maxConnections == 40)
            #expect(settings.maxConnectionsPerClient == 2)
            #expect(try ServeSettings(configuration: JSONParser().parse(Array("{}".utf8))).maxConnectionsPerClient == nil)
            let workspace = try Workspace(name: "serve-configured")
            func configure(_ serve: JSONValue) throws {
                var config = try JSONParser().parse(Array(Data(contentsOf: workspace.configURL)))
                if case .object(var object) = config {
                    object["serve"] = serve
                    config = .object(object)
                }
                try Data(JSONWriter.string(config).utf8).write(to: workspace.configURL)
            }
            try configure(["maxConnectionsPerClient": 0])
            let refused = try workspace.cli("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("serve.maxConnectionsPerClient"), "\(refused.stderr)")
            // serve.trustedProxies: a list of addresses and ranges, each entry that is not one named.
            let proxies = try ServeSettings(configuration: JSONParser().parse(Array(#"{"serve":{"trustedProxies":["10.0.0.0/8","192.0.2.7"]}}"#.utf8)))
            #expect(proxies.trustedProxies.trusts("10.200.0.1") && proxies.trustedProxies.trusts("192.0.2.7"))
            #expect(!proxies.trustedProxies.trusts("192.0.2.8") && !proxies.trustedProxies.trusts("11.0.0.1"))
            for (serve, field) in [(["trustedProxies": ["10.0.0.0/8", "proxy.example"]], "serve.trustedProxies[1]"), (["trustedProxies": "10.0.0.0/8"], "serve.trustedProxies")] as [(JSONValue, String)] {
                try configure(serve)
                let wrong = try workspace.cli("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"])
                #expect(wrong.status == 2)
                #expect(wrong.stderr.contains(field), "\(wrong.stderr)")
            }
            try configure(["maxConnections": 20, "maxConnectionsPerClient": 4])
            let running = try workspace.start("serve", db: "s.sqlite", ["--listen", "127.0.0.1:0"], label: "serve")
            defer { running.kill9() }
            guard let port = ServeLoad.reportedPort(of: running) else { return }
            // Four slow clients that never finish their request hold this address's bound.
            let busy = try (0..<4).map { _ in try RawClient(port: port) }
            for client in busy { client.send("GET /health HTTP/1.1\r\n") }
            // A fifth that sends nothing is answered on accept, long before the 10 s idle timeout.
            let fifth = try RawClient(port: port)
            let answer = fifth.response(timeout: 5)
            #expect(answer?.status == 503)
            #expect(answer?.field("retry-after") != nil)
            #expect(fifth.closedByServer(within: 5))
            // Another address is not held back by this one.
            let other = try RawClient(port: port, from: "127.0.0.2")
            other.send(RawClient.request("GET", "/health"))
            #expect(other.response(timeout: 10)?.status == 200)
            kill(running.pid, SIGTERM)
            #expect(running.wait(timeout: 30).status == 0)
        }

        // MARK: Helpers

        /// The user and system CPU time of a process so far, in clock ticks.
        static func cpuTicks(_ pid: Int32) -> Int {
            let text = String(decoding: Tool.read("/proc/\(pid)/stat"), as: UTF8.self)
            // Fields after the command name (which is in parentheses): state is the 3rd field, utime the 14th, stime the 15th.
            guard let close = text.lastIndex(of: ")") else { return 0 }
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
            return user + system
        }

        /// The descriptors a process has open.
        static func descriptors(_ pid: Int32) -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        }

        /// Whether a socket can be bound to ::1.
        static func hasIPv6Loopback() -> Bool {
            let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            inet_pton(AF_INET6, "::1", &address.sin6_addr)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            } == 0
        }

        /// Sends `request` to [::1]:`port` and reads until the server closes (bounded): the answer's text.
        static func exchangeIPv6(port: Int, _ request: String) -> String {
            let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, "::1", &address.sin6_addr)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
            guard connected == 0 else { return "cannot connect: errno \(errno)" }
            let bytes = Array(request.utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(30)
            var chunk = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline {
                var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                guard poll(&fds, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { break }
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { break }
                received += chunk[0..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }
    }
}
