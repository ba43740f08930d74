import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestSupport
import TestPKI

extension Reliability {
    /// `GET /lifecycle` (specification sections 9 and 12).
    @Suite("Serve: the lifecycle feed")
    struct ServeLifecycle {
        @Test("GET /lifecycle?since=C&limit=N: the lifecycle feed as NDJSON, as the library reads it; the token guards it")
        func lifecycle() throws {
            let server = try TestServer(token: "s3cret-token-0123456789")
            let good = ["Authorization: Bearer s3cret-token-0123456789"]
            for n in 71...73 { #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(n)).status == 200) }
            let denied = try server.exchange("GET", "/lifecycle")
            #expect(denied.status == 401)
            let all = try server.exchange("GET", "/lifecycle", headers: good)
            #expect(all.status == 200)
            #expect(all.field("content-type") == "application/x-ndjson")
            let lines = all.text.split(separator: "\n").compactMap { try? JSONParser().parse(Array($0.utf8)) }
            #expect(lines.count == all.text.split(separator: "\n").count)
            #expect(lines == (try server.engine.lifecycle(since: 0, limit: 10_000).map { $0.json() }))
            #expect(lines.count >= 3)
            #expect(lines.allSatisfy { line in ["SUBSCRIPTION_STARTED", "EXPIRATION"].contains(line["type"]) })
            let rest = try server.exchange("GET", "/lifecycle?since=1&limit=1", headers: good)
            let restLines = rest.text.split(separator: "\n").compactMap { try? JSONParser().parse(Array($0.utf8)) }
            #expect(restLines.map { $0["cursor"] } == [2])
            for bad in ["/lifecycle?since=x", "/lifecycle?limit=0", "/lifecycle?other=1"] {
                #expect(try server.exchange("GET", bad, headers: good).status == 400, "\(bad)")
            }
            #expect(try server.exchange("POST", "/lifecycle", body: "x", headers: good).status == 405)
        }
    }
}
