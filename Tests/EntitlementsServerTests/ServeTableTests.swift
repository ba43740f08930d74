import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// Specification section 9, row by row, over a real loopback connection.
    @Suite("Serve: the specification's table")
    struct ServeTable {
        @Test("POST /notifications: appended, then duplicate, after the commit; a forgery is rejected with 200 and quarantined")
        func notifications() throws {
            let server = try TestServer()
            let body = ServeSamples.notification(1)
            let first = try server.exchange("POST", "/notifications", body: body)
            #expect(first.status == 200)
            #expect(first.field("content-type") == "application/json")
            #expect(first.json?["result"] == "appended")
            #expect(first.json?["kind"] == "notification")
            #expect(first.json?["eventId"] == "5e000000-0000-4000-8000-000000000001")
            #expect(first.json?["appTransactionId"] == .string(ServeSamples.customer(1)))
            // Acknowledged means committed: another connection to the database sees it now.
            #expect(try Probe(server.workspace.path("serve.sqlite")).eventCount() == 1)
            let again = try server.exchange("POST", "/notifications", body: body)
            #expect(again.status == 200)
            #expect(again.json?["result"] == "duplicate")

            let forged = try server.exchange("POST", "/notifications", body: ServeSamples.notification(2, signer: ServeSamples.forger))
            #expect(forged.status == 200)
            #expect(forged.json?["result"] == "rejected")
            #expect(forged.json?["error"]?["code"] == "INVALID_CHAIN")
            let junk = try server.exchange("POST", "/notifications", body: "not json at all")
            #expect(junk.json?["result"] == "rejected")
            #expect(junk.json?["error"]?["code"] == "MALFORMED_INPUT")
            let notANotification = try server.exchange("POST", "/notifications", body: #"{"signedTransactionInfo":"a.b.c"}"#)
            #expect(notANotification.json?["error"]?["code"] == "MALFORMED_INPUT")
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try probe.eventCount() == 1)
            #expect(try probe.quarantineCount() == 3)
        }

        @Test("POST /transactions: any input document, a JSON array of result lines")
        func transactions() throws {
            let server = try TestServer()
            let pki = ServeSamples.pki
            let t1 = pki.sign(TestPayloads.transaction(transactionId: "2100000000000001", appTransactionId: "704200000000000001"))
            let t2 = pki.sign(
                TestPayloads.transaction(
                    transactionId: "2100000000000002", appTransactionId: "704200000000000001", productId: "com.example.lifetime",
                    type: "Non-Consumable", expiresDate: nil))
            let page = #"{"signedTransactions":[""# + t1 + #"",""# + t2 + #""],"hasMore":false}"#
            let response = try server.exchange("POST", "/transactions", body: page)
            #expect(response.status == 200)
            guard case .array(let lines)? = response.json else {
                Issue.record("expected an array: \(response.text)")
                return
            }
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { $0["result"] == "appended" && $0["kind"] == "transaction" })
            let bare = try server.exchange("POST", "/transactions", body: t1)
            let line = bare.json?.element(0)
            #expect(line?["result"] == "duplicate")
            #expect(line?["eventId"] == lines[0]["eventId"])
            #expect(line?["appTransactionId"] == "704200000000000001")
            #expect(line?["input"] == 1)
            let empty = try server.exchange("POST", "/transactions", body: #"{"signedTransactions":[],"hasMore":false}"#)
            #expect(empty.json?.element(0)?["result"] == "empty")
            let device = try server.exchange("POST", "/transactions", body: #"{"signedTransactionInfo":"x"}"#)
            #expect(device.status == 200)
            #expect(device.json?.element(0)?["result"] == "rejected")
        }

        @Test("GET /customers/{id}, otid: alias, ?originalTransactionId, ?appAccountToken, &at, 404 NOT_FOUND")
        func customers() throws {
            let server = try TestServer()
            #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(7)).status == 200)
            let id = ServeSamples.customer(7)
            let direct = try server.exchange("GET", "/customers/\(id)")
            #expect(direct.status == 200)
            #expect(direct.json?["appTransactionId"] == .string(id))
            #expect(direct.json?["subscriptions"]?.element(0)?["originalTransactionId"] == .string(ServeSamples.originalTransactionId(7)))
            let expected = JSONWriter.string(try server.engine.query(.appTransactionId(id), at: TestPayloads.january2025 + 1).json())
            let at = try server.exchange("GET", "/customers/\(id)?at=\(TestPayloads.january2025 + 1)")
            #expect(at.text == expected)
            #expect(at.json?["entitlements"]?["pro"]?["active"] == true)
            let byOriginal = try server.exchange("GET", "/customers?originalTransactionId=\(ServeSamples.originalTransactionId(7))&at=\(TestPayloads.january2025 + 1)")
            #expect(byOriginal.text == expected)
            let byTransaction = try server.exchange("GET", "/customers?transactionId=\(ServeSamples.originalTransactionId(7))&at=\(TestPayloads.january2025 + 1)")
            #expect(byTransaction.text == expected)
            #expect(try server.exchange("GET", "/customers?transactionId=42").status == 404)
            let iso = try server.exchange("GET", "/customers/\(id)?at=2025-01-01T00:00:00.001Z")
            #expect(iso.text == expected)
            let token = try server.exchange("GET", "/customers?appAccountToken=\(ServeSamples.accountToken(7))")
            #expect(token.status == 200)
            #expect(token.json?["appTransactionIds"] == [.string(id)])
            let missing = try server.exchange("GET", "/customers/704999999999999999")
            #expect(missing.status == 404)
            #expect(missing.json?["error"]?["code"] == "NOT_FOUND")
            let missingOriginal = try server.exchange("GET", "/customers?originalTransactionId=1")
            #expect(missingOriginal.status == 404)
            #expect(missingOriginal.json?["error"]?["code"] == "NOT_FOUND")
            let alias = try server.exchange("GET", "/customers/otid:\(ServeSamples.originalTransactionId(7))")
            #expect(alias.status == 404 || alias.json?["appTransactionId"] == .string(id))
            for bad in ["/customers?at=1", "/customers?originalTransactionId=1&transactionId=2", "/customers/\(id)?at=12", "/customers/\(id)?at=x",
                "/customers/\(id)?what=1", "/customers?originalTransactionId=%zz"]
            {
                let response = try server.exchange("GET", bad)
                #expect(response.status == 400, "\(bad): \(response.text)")
                #expect(response.json?["error"]?["code"] == "BAD_REQUEST")
            }
        }

        @Test("GET /customers/{id}/history: the history lines as a JSON array, ?until=, 404 NOT_FOUND")
        func history() throws {
            let server = try TestServer()
            #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(8)).status == 200)
            let id = ServeSamples.customer(8)
            let response = try server.exchange("GET", "/customers/\(id)/history")
            #expect(response.status == 200)
            #expect(response.json == .array(try server.engine.history(.appTransactionId(id)).json()))
            guard case .array(let lines)? = response.json else {
                Issue.record("expected an array: \(response.text)")
                return
            }
            #expect(!lines.isEmpty)
            #expect(lines.first?["at"] == .int(TestPayloads.january2025))
            let early = try server.exchange("GET", "/customers/\(id)/history?until=\(TestPayloads.january2025 - 1)")
            #expect(early.json == .array([]))
            let alias = try server.exchange("GET", "/customers/otid:\(ServeSamples.originalTransactionId(8))/history")
            #expect(alias.status == 200)
            let missing = try server.exchange("GET", "/customers/704999999999999999/history")
            #expect(missing.status == 404)
            #expect(missing.json?["error"]?["code"] == "NOT_FOUND")
            #expect(try server.exchange("GET", "/customers/\(id)/history?until=5").status == 400)
        }

        @Test("Engine.append(verified:) and its async twin: items verified elsewhere, committed in one transaction")
        func appendVerified() async throws {
            let workspace = try Workspace(name: "append-verified")
            let engine = try workspace.engine("a.sqlite")
            let items = engine.documentVerifier.verifiedItems(InputBytes(ServeSamples.notification(61)))
                + engine.documentVerifier.verifiedItems(InputBytes("junk"))
            let results = try await engine.append(verified: items)
            #expect(results.map(\.outcome) == [.appended, .rejected])
            let again = try await engine.append(verified: items)
            #expect(again.map(\.outcome) == [.duplicate, .rejected])
        }

        @Test("GET /changes?since=C&limit=N: the changes feed as NDJSON, as the library reads it")
        func changes() throws {
            let server = try TestServer()
            // A subscription that is active now (expiring in 2100), so the feed has a line to show.
            let transaction = TestPayloads.transaction(
                transactionId: "3000000000000090", appTransactionId: "705000000000000090", expiresDate: 4_102_444_800_000)
            let payload = TestPayloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "5e000000-0000-4000-8000-000000000090",
                signedTransactionInfo: ServeSamples.pki.sign(transaction))
            let body = #"{"signedPayload":""# + ServeSamples.pki.sign(payload) + #""}"#
            #expect(try server.exchange("POST", "/notifications", body: body).status == 200)
            for n in 51...53 { #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(n)).status == 200) }
            let all = try server.exchange("GET", "/changes")
            #expect(all.status == 200)
            #expect(all.field("content-type") == "application/x-ndjson")
            let lines = all.text.split(separator: "\n").compactMap { try? JSONParser().parse(Array($0.utf8)) }
            #expect(lines.count == all.text.split(separator: "\n").count)
            let expected = try server.engine.changes(since: 0, limit: 10_000).map { $0.json() }
            #expect(lines == expected)
            #expect(!lines.isEmpty)
            guard case .int(let first)? = lines.first?["cursor"] else { return }
            let rest = try server.exchange("GET", "/changes?since=\(first)&limit=1")
            let restLines = rest.text.split(separator: "\n")
            #expect(restLines.count == min(1, lines.count - 1))
            for bad in ["/changes?since=x", "/changes?limit=0", "/changes?other=1"] {
                #expect(try server.exchange("GET", bad).status == 400, "\(bad)")
            }
        }

        @Test("GET /health; unknown paths 404; wrong methods 405 with Allow")
        func healthAndRouting() throws {
            let server = try TestServer()
            let health = try server.exchange("GET", "/health")
            #expect(health.status == 200)
            #expect(health.json == ["ok": true])
            // `/` is the dashboard (specification section 14).
            for path in ["/nope", "/dashboard/nope.js", "/customers/a/b", "/customers//history", "/healthz", "/notifications/1"] {
                #expect(try server.exchange("GET", path).status == 404, "\(path)")
            }
            // A path that cannot be percent-decoded is malformed, whatever endpoint it names.
            for path in ["/customers/%ZZ", "/customers/%E2%82/history", "/users/a%2"] {
                let malformed = try server.exchange("GET", path)
                #expect(malformed.status == 400, "\(path)")
                #expect(malformed.json?["error"]?["code"] == "BAD_REQUEST", "\(path)")
            }
            let wrong = try server.exchange("GET", "/notifications")
            #expect(wrong.status == 405)
            #expect(wrong.field("allow") == "POST")
            #expect(try server.exchange("DELETE", "/customers/1").status == 405)
            let post = try server.exchange("POST", "/health", body: "x")
            #expect(post.status == 405)
            #expect(post.field("allow") == "GET, HEAD")
            // A compressed body is refused, not read as its compressed bytes.
            let compressed = try server.exchange("POST", "/notifications", body: "x", headers: ["Content-Encoding: gzip"])
            #expect(compressed.status == 415)
            #expect(compressed.json?["error"]?["code"] == "UNSUPPORTED_MEDIA_TYPE")
        }

        @Test("bearer token: every endpoint but POST /notifications and GET /health answers 401 without it")
        func token() throws {
            let server = try TestServer(token: "s3cret-token-0123456789")
            let good = ["Authorization: Bearer s3cret-token-0123456789"]
            for (method, path, body) in [("GET", "/customers/1", nil), ("GET", "/customers?originalTransactionId=1", nil),
                ("POST", "/transactions", "x"), ("GET", "/changes", nil), ("GET", "/customers/1/history", nil)] as [(String, String, String?)]
            {
                let denied = try server.exchange(method, path, body: body)
                #expect(denied.status == 401, "\(method) \(path)")
                #expect(denied.field("www-authenticate") == "Bearer")
                #expect(denied.json?["error"]?["code"] == "UNAUTHORIZED")
                #expect(try server.exchange(method, path, body: body, headers: ["Authorization: Bearer wrong"]).status == 401)
                #expect(try server.exchange(method, path, body: body, headers: ["Authorization: Basic czNjcmV0"]).status == 401)
                #expect(try server.exchange(method, path, body: body, headers: good).status != 401, "\(method) \(path)")
            }
            #expect(try server.exchange("GET", "/health", headers: ["Authorization: bearer s3cret-token-0123456789"]).status == 200)
            // Apple's webhook carries no token.
            let webhook = try server.exchange("POST", "/notifications", body: ServeSamples.notification(3))
            #expect(webhook.status == 200)
            #expect(webhook.json?["result"] == "appended")
        }

        @Test("one structured access log line per request: method, path without query values, status, bytes, microseconds")
        func accessLog() throws {
            let server = try TestServer()
            _ = try server.exchange("GET", "/customers?originalTransactionId=secret123&at=1790000000000")
            _ = try server.exchange("GET", "/health")
            #expect(server.stop())
            let lines = server.logLines
            #expect(lines.count == 2)
            // Each line is written once its answer is sent: the two connections' lines may come in either order.
            let query = lines.first { $0["path"] == "/customers?originalTransactionId=&at=" }
            let health = lines.first { $0["path"] == "/health" }
            #expect(query?["status"] == 404)
            #expect(query?["method"] == "GET")
            #expect(health?["status"] == 200)
            #expect(health?["bytes"] == 11)
            #expect(health?["client"] == "127.0.0.1")
            #expect(lines.allSatisfy { if case .int(let us)? = $0["us"] { us >= 0 } else { false } })
            #expect(!(try String(contentsOf: server.logURL, encoding: .utf8)).contains("secret123"))
        }
    }
}
