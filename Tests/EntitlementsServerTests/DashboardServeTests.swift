import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import HTTPServer
import Testing
import TestPKI
import TestSupport

/// The dashboard's files over HTTP, and the two JSON endpoints it reads besides the query API.
@Suite struct DashboardServeTests {
    /// The page's files on disk (Sources/EntitlementsServer/Dashboard/page).
    static let pageFolder = Scenario.packageRoot.appendingPathComponent("Sources/EntitlementsServer/Dashboard/page")
    static let files = ["index.html", "dashboard.css", "dashboard.js"]

    @Test("GET / and its files: no token needed, a strict Content-Security-Policy, the bytes of the files on disk")
    func pageAndPolicy() throws {
        let server = try TestServer(token: "query-token")
        let page = try server.exchange("GET", "/")
        #expect(page.status == 200)
        #expect(page.field("content-type") == "text/html; charset=utf-8")
        let policy = try #require(page.field("content-security-policy"))
        let directives = Set(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
        for directive in [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "base-uri 'none'", "form-action 'none'",
            "frame-ancestors 'none'",
        ] {
            #expect(directives.contains(directive), "\(policy)")
        }
        #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval") && !policy.contains("http"), "\(policy)")
        #expect(page.field("x-content-type-options") == "nosniff")
        #expect(page.text.contains(#"<script src="/dashboard/dashboard.js""#))
        #expect(page.text.contains(#"<link rel="stylesheet" href="/dashboard/dashboard.css">"#))

        for (name, type) in [("index.html", "text/html"), ("dashboard.css", "text/css"), ("dashboard.js", "text/javascript")] {
            let answer = try server.exchange("GET", "/dashboard/\(name)")
            #expect(answer.status == 200, "\(name)")
            #expect(answer.field("content-type")?.hasPrefix(type) == true, "\(name)")
            #expect(answer.field("content-security-policy") == policy, "\(name)")
            // The binary serves exactly the files of the source tree (scripts/embed-resources.sh is current).
            let onDisk = Tool.read(Self.pageFolder.appendingPathComponent(name).path)
            #expect(answer.body == onDisk, "\(name) differs from its file: run scripts/embed-resources.sh")
        }
        #expect(try server.exchange("GET", "/dashboard/other.js").status == 404)
        #expect(try server.exchange("GET", "/dashboard/../dashboard/dashboard.js").status == 404)
        #expect(try server.exchange("POST", "/", body: "x").status == 405)
        // The data is not open: the JSON endpoints still want the token.
        #expect(try server.exchange("GET", "/webhooks").status == 401)
        #expect(try server.exchange("GET", "/rejections").status == 401)
    }

    @Test("the page requests nothing from elsewhere and builds no markup from data")
    func noOutsideRequestNoMarkup() throws {
        let present = try FileManager.default.contentsOfDirectory(atPath: Self.pageFolder.path).sorted()
        #expect(present == Self.files.sorted(), "the page's files: \(present)")
        for name in Self.files {
            let text = String(decoding: Tool.read(Self.pageFolder.appendingPathComponent(name).path), as: UTF8.self)
            // No address of another server, not even a namespace URI: every reference is relative to this one.
            #expect(!text.contains("http://") && !text.contains("https://"), "\(name) names another server")
            #expect(!text.contains("//cdn") && !text.contains("src=\"//") && !text.contains("href=\"//") && !text.contains("url("), "\(name)")
            #expect(!text.contains("@import") && !text.contains("@font-face"), "\(name)")
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"] {
                #expect(!text.contains(sink), "\(name) uses \(sink)")
            }
        }
        let page = String(decoding: Tool.read(Self.pageFolder.appendingPathComponent("index.html").path), as: UTF8.self)
        #expect(!page.contains("<script>") && !page.contains(" style=") && !page.contains("<style"), "no inline script or style")
        #expect(!page.contains(" on") || !page.contains("onclick="), "no inline handler")
    }

    @Test("GET /rejections: the latest quarantined inputs, newest first, with limit; bad parameters are 400")
    func rejections() throws {
        let server = try TestServer()
        #expect(try server.exchange("GET", "/rejections").json == ["rejections": []])
        let forged = try server.exchange("POST", "/notifications", body: ServeSamples.notification(1, signer: ServeSamples.forger))
        #expect(forged.json?["error"]?["code"] == "INVALID_CHAIN")
        let junk = try server.exchange("POST", "/transactions", body: "<script>alert(1)</script> is not JSON")
        #expect(junk.json?.firstElement?["result"] == "rejected")
        let answer = try server.exchange("GET", "/rejections")
        #expect(answer.status == 200)
        #expect(answer.field("content-type") == "application/json")
        guard case .array(let rows)? = answer.json?["rejections"] else {
            Issue.record("no rejections array: \(answer.text)")
            return
        }
        #expect(rows.count == 2)
        #expect(rows.first?["code"] == "MALFORMED_INPUT")
        #expect(rows.first?["excerpt"] == "<script>alert(1)</script> is not JSON")
        #expect(rows.first?["size"] == .int(Int64("<script>alert(1)</script> is not JSON".utf8.count)))
        #expect(rows.last?["code"] == "INVALID_CHAIN")
        if case .string(let hash)? = rows.first?["sha256"] { #expect(hash.count == 64) } else { Issue.record("no sha256") }
        for row in rows {
            for key in ["id", "receivedAt", "code", "message", "size", "sha256", "excerpt"] { #expect(row[key] != nil, "\(key)") }
        }
        let one = try server.exchange("GET", "/rejections?limit=1")
        if case .array(let limited)? = one.json?["rejections"] { #expect(limited.count == 1 && limited[0] == rows[0]) }
        for bad in ["/rejections?limit=0", "/rejections?limit=1001", "/rejections?limit=x", "/rejections?since=1"] {
            let refused = try server.exchange("GET", bad)
            #expect(refused.status == 400, "\(bad)")
            #expect(refused.json?["error"]?["code"] == "BAD_REQUEST", "\(bad)")
        }
        // The library's answer is the same.
        #expect(try server.engine.rejections(limit: 50).map { $0.json() } == rows)
    }

    @Test("GET /webhooks: each configured endpoint in each feed, as webhooks status prints it")
    func webhooks() throws {
        let empty = try TestServer()
        #expect(try empty.exchange("GET", "/webhooks").json == ["endpoints": []])

        let (descriptor, port) = try LoopbackListener.open()
        close(descriptor)  // nothing listens there: deliveries fail and are retried
        let path = E2E.folder().appendingPathComponent("serve.sqlite").path
        var configuration = E2E.configuration()
        configuration.webhooks = [
            WebhookEndpoint(
                url: URL(string: "http://127.0.0.1:\(port)/hooks")!, signer: WebhookSigner(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")!,
                feeds: [.lifecycle, .changes], retrySchedule: WebhookRetrySchedule(delays: [60_000]))
        ]
        let engine = try Engine(configuration: configuration, databasePath: path)
        let server = try Server(
            engine: engine, settings: ServeSettings(listen: ListenAddress(host: "127.0.0.1", port: 0), token: nil), log: nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            try? server.run()
            done.signal()
        }.start()
        defer {
            server.stop()
            _ = done.wait(timeout: .now() + 60)
        }
        let answer = try RawClient.exchange(port: server.address.port, "GET", "/webhooks")
        #expect(answer.status == 200)
        guard case .array(let endpoints)? = answer.json?["endpoints"] else {
            Issue.record("no endpoints array: \(answer.text)")
            return
        }
        #expect(endpoints.map { $0["feed"] } == ["lifecycle", "changes"])
        let expected = try engine.webhookStatus().map { $0.json() }
        #expect(endpoints.count == expected.count)
        for (shown, status) in zip(endpoints, expected) {
            #expect(shown["url"] == .string("http://127.0.0.1:\(port)/hooks"))
            #expect(shown["url"] == status["url"] && shown["lastCursor"] == status["lastCursor"])
            for key in ["deliveredCursor", "lastCursor", "lag", "failingCursor", "failingSince", "attempts", "nextAttemptAt", "lastError", "failedLines"] {
                #expect(shown[key] != nil, "\(key)")
            }
        }
        #expect(try RawClient.exchange(port: server.address.port, "GET", "/webhooks?x=1").status == 400, "it takes no parameter")
    }
}

extension JSONValue {
    /// The first element of an array (`nil` for anything else).
    var firstElement: JSONValue? {
        if case .array(let elements) = self { return elements.first }
        return nil
    }
}
