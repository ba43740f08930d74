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
    /// The limits of specification section 9 and the hostile requests of STYLE's "HTTP at the edge",
    /// each over a real loopback connection.
    @Suite("Serve: limits and hostile requests")
    struct ServeLimits {
        static func quick(_ options: inout Server.Options) {
            options.limits.idleTimeoutMilliseconds = 300
            options.limits.headerTimeoutMilliseconds = 800
            options.limits.bodyTimeoutMilliseconds = 800
        }

        @Test("a body over maxInputBytes is 413 from its head, the rest unread, nothing stored; chunked too")
        func bodyLimit() throws {
            let server = try TestServer(maxInputBytes: 2048)
            let declared = try RawClient(port: server.port)
            declared.send("POST /notifications HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\n\r\n" + String(repeating: "a", count: 100))
            let response = declared.response()
            #expect(response?.status == 413)
            #expect(response?.json?["error"]?["code"] == "BODY_TOO_LARGE")
            #expect(response?.field("connection") == "close")
            #expect(declared.closedByServer(within: 10))

            let chunked = try RawClient(port: server.port)
            let chunk = String(repeating: "b", count: 1500)
            chunked.send("POST /transactions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5dc\r\n\(chunk)\r\n5dc\r\n")
            #expect(chunked.response()?.status == 413)
            #expect(chunked.closedByServer(within: 10))

            let withContinue = try RawClient(port: server.port)
            withContinue.send("POST /notifications HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 99999\r\n\r\n")
            #expect(withContinue.response()?.status == 413)  // no 100 Continue first
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try probe.eventCount() == 0)
            #expect(try probe.quarantineCount() == 0)
        }

        @Test("headers over 16 KiB are 431; too many fields too")
        func headerLimit() throws {
            let server = try TestServer()
            let big = try RawClient(port: server.port)
            big.send("GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + String(repeating: "a", count: 17 * 1024) + "\r\n\r\n")
            let response = big.response()
            #expect(response?.status == 431)
            #expect(response?.json?["error"]?["code"] == "HEADERS_TOO_LARGE")
            #expect(big.closedByServer(within: 10))
            let many = try RawClient(port: server.port)
            many.send("GET /health HTTP/1.1\r\nHost: t\r\n" + (0..<101).map { "X-\($0): 1\r\n" }.joined() + "\r\n")
            #expect(many.response()?.status == 431)
            // Just under the limit is served.
            let fits = try RawClient(port: server.port)
            fits.send("GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + String(repeating: "a", count: 15 * 1024) + "\r\n\r\n")
            #expect(fits.response()?.status == 200)
        }

        @Test("a silent client is closed after the idle timeout, before its first request and between requests")
        func idle() throws {
            let server = try TestServer(configure: Self.quick)
            let silent = try RawClient(port: server.port)
            #expect(silent.closedByServer(within: 10))
            let kept = try RawClient(port: server.port)
            kept.send(RawClient.request("GET", "/health"))
            #expect(kept.response()?.status == 200)
            #expect(kept.closedByServer(within: 10))
            #expect(try server.exchange("GET", "/health").status == 200)
        }

        @Test("slowloris: a head or a body trickling in under the idle timeout is cut at its phase deadline with 408")
        func slowloris() throws {
            let server = try TestServer(configure: Self.quick)
            let slowHead = try RawClient(port: server.port)
            slowHead.send("GET /health HTTP/1.1\r\n")
            var answered: RawClient.Response? = nil
            for index in 0..<100 {
                // One header line every 100 ms: never idle for 300 ms, but the head never ends.
                guard slowHead.send("X-\(index): a\r\n") else { break }
                usleep(100_000)
                if slowHead.closedByServer(within: 0.001) { break }
            }
            answered = slowHead.response(timeout: 1)
            #expect(answered == nil || answered?.status == 408)
            #expect(slowHead.closedByServer(within: 10))
            #expect(TestServer.eventually { server.logLines.contains { $0["status"] == 408 } })

            let slowBody = try RawClient(port: server.port)
            slowBody.send("POST /transactions HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
            var cut = false
            for _ in 0..<100 {
                guard slowBody.send("a") else { cut = true; break }
                usleep(100_000)
                if slowBody.closedByServer(within: 0.001) { cut = true; break }
            }
            #expect(cut)
            #expect(TestServer.eventually { server.logLines.filter { $0["status"] == 408 }.count == 2 })
        }

        @Test("at most maxConnections at once: the next sheds the oldest idle one and is served at once")
        func connectionCap() throws {
            let server = try TestServer { options in options.limits.maxConnections = 4 }
            var held: [RawClient] = []
            for _ in 0..<4 {
                let client = try RawClient(port: server.port)
                client.send(RawClient.request("GET", "/health"))
                #expect(client.response()?.status == 200)
                held.append(client)
            }
            let waiting = try RawClient(port: server.port)
            waiting.send(RawClient.request("GET", "/health"))
            // The four are idle between requests: the oldest is closed for it.
            #expect(waiting.response(timeout: 30)?.status == 200)
            #expect(held[0].closedByServer(within: 30))
        }

        @Test(
            "malformed framing is 400 and closes the connection (smuggling attempts included)",
            arguments: [
                "GET /health HTTP/1.1\nHost: t\r\n\r\n",
                "GET /health\r\nHost: t\r\n\r\n",
                "POST /transactions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "POST /transactions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                "POST /transactions HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n",
                "POST /transactions HTTP/1.1\r\nHost: t\r\nContent-Length: 5 5\r\n\r\nhello",
                "POST /transactions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nnothex\r\n",
                "GET /health HTTP/1.1\r\nHost: t\r\n  folded: yes\r\n\r\n",
                "GET /health HTTP/1.1\r\n\r\n",
            ])
        func malformed(_ text: String) throws {
            let server = try TestServer()
            let client = try RawClient(port: server.port)
            client.send(text)
            let response = client.response()
            #expect(response?.status == 400, "\(text.debugDescription)")
            #expect(response?.json?["error"]?["code"] == "BAD_REQUEST")
            #expect(client.closedByServer(within: 10))
            #expect(try Probe(server.workspace.path("serve.sqlite")).eventCount() == 0)
        }

        @Test("a chunked notification is ingested; pipelined requests are answered in order; keep-alive serves many")
        func chunkedPipeliningKeepAlive() throws {
            let server = try TestServer()
            let body = Array(ServeSamples.notification(11).utf8)
            var chunked = "POST /notifications HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            var offset = 0
            while offset < body.count {
                let piece = body[offset..<min(body.count, offset + 700)]
                chunked += String(piece.count, radix: 16) + "\r\n" + String(decoding: piece, as: UTF8.self) + "\r\n"
                offset += piece.count
            }
            chunked += "0\r\n\r\n"
            let client = try RawClient(port: server.port)
            // Three requests in one write: a chunked POST, a GET, a POST with Content-Length.
            client.send(
                Array(chunked.utf8) + RawClient.request("GET", "/customers/\(ServeSamples.customer(11))")
                    + RawClient.request("POST", "/notifications", body: Array(ServeSamples.notification(12).utf8)))
            let first = client.response()
            let second = client.response()
            let third = client.response()
            #expect(first?.json?["result"] == "appended")
            #expect(second?.status == 200)
            #expect(second?.json?["appTransactionId"] == .string(ServeSamples.customer(11)))
            #expect(third?.json?["appTransactionId"] == .string(ServeSamples.customer(12)))
            for _ in 0..<5 {
                client.send(RawClient.request("GET", "/health"))
                #expect(client.response()?.status == 200)
            }
            client.send(RawClient.request("GET", "/health", headers: ["Connection: close"]))
            #expect(client.response()?.field("connection") == "close")
            #expect(client.closedByServer(within: 10))
        }

        @Test("Expect: 100-continue gets the interim answer before the body is sent")
        func expectContinue() throws {
            let server = try TestServer()
            let body = ServeSamples.notification(21)
            let client = try RawClient(port: server.port)
            client.send("POST /notifications HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
            #expect(client.response()?.status == 100)
            client.send(body)
            let final = client.response()
            #expect(final?.status == 200)
            #expect(final?.json?["result"] == "appended")
            // A request refused from its head gets the refusal instead of 100.
            let wrong = try RawClient(port: server.port)
            wrong.send("POST /nowhere HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
            #expect(wrong.response()?.status == 404)
        }

        @Test("a client gone mid-body stores nothing; a client gone before the answer still gets its notification committed once")
        func disconnects() throws {
            let server = try TestServer()
            let body = ServeSamples.notification(31)
            var half: RawClient? = try RawClient(port: server.port)
            half?.send("POST /notifications HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + String(body.prefix(body.count / 2)))
            half = nil  // gone mid-body
            // The server notices (an access log line with status 0: nothing answered) and serves nothing.
            #expect(TestServer.eventually { server.logLines.contains { $0["status"] == 0 } })
            var gone: RawClient? = try RawClient(port: server.port)
            gone?.send(RawClient.request("POST", "/notifications", body: Array(body.utf8)))
            gone = nil  // closed before the answer
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try TestServer.eventually { try probe.eventCount() == 1 })
            #expect(try probe.quarantineCount() == 0)
            // The sender, not knowing, sends it again: a duplicate, nothing doubled.
            let again = try server.exchange("POST", "/notifications", body: body)
            #expect(again.json?["result"] == "duplicate")
            #expect(try probe.eventCount() == 1)
            #expect(try server.exchange("GET", "/health").status == 200)
        }

        @Test("junk on the public webhook: the quarantine keeps a bounded amount per client, then counted summary rows")
        func quarantineBound() throws {
            let server = try TestServer { options in
                options.quarantine = QuarantineBound(perClientInputs: 3, perClientBytes: 1 << 20, totalInputs: 5, summaryIntervalMilliseconds: 0)
            }
            for index in 0..<10 {
                let response = try server.exchange(
                    "POST", "/notifications", body: "junk number \(index)", headers: ["X-Forwarded-For: 198.51.100.1, 203.0.113.7"])
                #expect(response.json?["result"] == "rejected")
                #expect(response.json?["error"]?["code"] == "MALFORMED_INPUT")
            }
            // Another address has its own bound, until the total is reached.
            for index in 0..<4 {
                let response = try server.exchange("POST", "/notifications", body: "other junk \(index)")
                #expect(response.json?["result"] == "rejected")
            }
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            func notKept(_ address: String) throws -> Int {
                try probe.strings("SELECT message FROM quarantine WHERE code = 'NOT_KEPT'").filter { $0.hasSuffix("from \(address) not kept") }
                    .compactMap { Int($0.split(separator: " ")[0]) }.reduce(0, +)
            }
            let counted = try TestServer.eventually { try notKept("203.0.113.7") == 7 && notKept("127.0.0.1") == 2 }
            let rows = try probe.strings("SELECT code || ' ' || message FROM quarantine")
            #expect(counted, "\(rows)")
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'MALFORMED_INPUT'") == 5)
            let sample = try probe.strings("SELECT message FROM quarantine WHERE code = 'NOT_KEPT' ORDER BY id").first ?? ""
            #expect(sample.contains("more rejected input"))
        }

        @Test("data Apple signed, rejected for its app or environment, is kept past the bounds junk used up; repeats are free")
        func signedRejectionsKept() throws {
            let server = try TestServer { options in
                options.quarantine = QuarantineBound(
                    perClientInputs: 2, totalInputs: 3, summaryIntervalMilliseconds: 0, signedInputs: 4)
            }
            for index in 0..<5 {
                let response = try server.exchange("POST", "/notifications", body: "junk number \(index)")
                #expect(response.json?["error"]?["code"] == "MALFORMED_INPUT")
            }
            // Another app's and another environment's notifications, from the address whose bound junk spent.
            var bodies = (0..<3).map { ServeSamples.foreignNotification($0) }
            bodies.append(ServeSamples.foreignNotification(3, environment: TestPayloads.environment, bundleId: "com.example.other"))
            for body in bodies + [bodies[0], bodies[1]] {
                let response = try server.exchange("POST", "/notifications", body: body)
                #expect(response.status == 200)
                let code = response.json?["error"]?["code"]
                #expect(code == "INVALID_ENVIRONMENT" || code == "INVALID_APP_IDENTIFIER", "\(response.text)")
            }
            // A fifth distinct one is past the signed bound: counted, not kept.
            let past = try server.exchange("POST", "/notifications", body: ServeSamples.foreignNotification(4))
            #expect(past.json?["error"]?["code"] == "INVALID_ENVIRONMENT")
            // A forgery is junk, whatever it claims.
            let forged = try server.exchange("POST", "/notifications", body: ServeSamples.notification(5, signer: ServeSamples.forger))
            #expect(forged.json?["error"]?["code"] == "INVALID_CHAIN")
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            let counted = try TestServer.eventually {
                try probe.strings("SELECT message FROM quarantine WHERE code = 'NOT_KEPT'").compactMap { Int($0.split(separator: " ")[0]) }.reduce(0, +) == 5
            }
            let rows = try probe.strings("SELECT code || ' ' || message FROM quarantine")
            #expect(counted, "\(rows)")
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'MALFORMED_INPUT'") == 2)
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'INVALID_ENVIRONMENT'") == 3)
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'INVALID_APP_IDENTIFIER'") == 1)
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'INVALID_CHAIN'") == 0)
            #expect(try probe.eventCount() == 0)
        }

        @Test("serve.trustedProxies: a proxy on another machine names its clients in X-Forwarded-For; others' headers are not believed")
        func trustedProxies() throws {
            // The test's connections come from loopback, a proxy always trusted; the chain behind it is
            // read from the right through every trusted hop, up to the first address that is not one.
            let proxies = try TrustedProxies(parsing: ["10.0.0.0/8", "2001:db8::/32", "192.0.2.10"])
            let server = try TestServer(trustedProxies: proxies) { options in
                options.quarantine = QuarantineBound(perClientInputs: 1, totalInputs: 100, summaryIntervalMilliseconds: 0)
            }
            let chains = [
                "198.51.100.1, 10.1.2.3",  // client, then a trusted proxy (then loopback, the socket peer)
                "203.0.113.9, 192.0.2.10, 10.9.9.9",  // two trusted hops
                "198.51.100.1, 10.1.2.3, 10.4.4.4",  // the first client again, through another path
                "unknown, 2001:db8::7",  // a hop that is no address: the last trusted one counts
                "198.51.100.77, 203.0.113.50",  // an untrusted hop: the client's word before it is ignored
            ]
            for (index, chain) in chains.enumerated() {
                let response = try server.exchange("POST", "/notifications", body: "junk \(index)", headers: ["X-Forwarded-For: \(chain)"])
                #expect(response.json?["result"] == "rejected")
            }
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try TestServer.eventually { try probe.int("SELECT count(*) FROM quarantine WHERE code = 'NOT_KEPT'") == 1 })
            let summaries = try probe.strings("SELECT message FROM quarantine WHERE code = 'NOT_KEPT'")
            #expect(summaries == ["1 more rejected input from 198.51.100.1 not kept"])
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code = 'MALFORMED_INPUT'") == 4)

            let key = { (peer: String, chain: String?) in proxies.client(peer: peer, forwardedFor: chain) }
            #expect(key("10.0.0.1", "198.51.100.1") == "198.51.100.1")
            #expect(key("198.51.100.200", "10.0.0.1") == "198.51.100.200")  // an untrusted peer's header is its word
            #expect(key("::ffff:10.0.0.1", "203.0.113.4") == "203.0.113.4")
            #expect(key("2001:db8::1", "2001:db9::1234:5678") == "2001:db9::1234:5678")
            #expect(key("127.0.0.1", "10.0.0.8, 10.0.0.9") == "10.0.0.8")  // only proxies: the farthest seen
            #expect(key("127.0.0.1", nil) == "127.0.0.1")
            for wrong in ["10.0.0.0/33", "proxy.example", "::1/129", "10.0.0.0/"] {
                do {
                    _ = try TrustedProxies(parsing: ["192.0.2.1", wrong])
                    Issue.record("\(wrong) was read as a trusted proxy")
                } catch {
                    #expect(error.field == "serve.trustedProxies[1]")
                }
            }
        }

        @Test("a database that cannot be written (disk full) answers 503 (so Apple retries), and 200 again once it can")
        func unwritable() throws {
            guard Faults.canMount else {
                print("serve 503: skipped, this machine cannot mount a small tmpfs")
                return
            }
            let workspace = try Workspace(name: "serve-full")
            let disk = try Faults.SmallDisk(at: workspace.url("disk"), size: "4m")
            let onDisk = try TestServer(database: "disk/serve.sqlite", workspace: workspace)
            #expect(try onDisk.exchange("POST", "/notifications", body: ServeSamples.notification(42)).json?["result"] == "appended")
            // Fill the disk.
            let filler = disk.folder.appendingPathComponent("filler").path
            let fd = open(filler, O_WRONLY | O_CREAT, 0o644)
            let block = [UInt8](repeating: 0, count: 4096)
            while write(fd, block, block.count) > 0 {}
            close(fd)
            let refused = try onDisk.exchange("POST", "/notifications", body: ServeSamples.notification(43))
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.field("retry-after") != nil)
            #expect(refused.json?["error"]?["code"] != nil)
            try FileManager.default.removeItem(atPath: filler)
            let retried = try onDisk.exchange("POST", "/notifications", body: ServeSamples.notification(43))
            #expect(retried.status == 200, "\(retried.text)")
            #expect(retried.json?["result"] == "appended")
        }
    }
}
