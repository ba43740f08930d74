import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

/// The operator's endpoints of `serve` (specification section 13) on a loopback server:
/// opened by `serve.adminToken` alone, the token's label recorded as the operator.
@Suite("Serve: operator endpoints")
struct ServeAdminTests {
    static let queryToken = "query-token-0123456789"
    static let adminToken = "admin-token-9876543210"
    static let admin = ["Authorization: Bearer \(adminToken)"]

    static func server() throws -> TestServer {
        let server = try TestServer(
            name: "serve-admin", token: queryToken, adminTokens: [AdminToken(token: adminToken, label: "support-desk")])
        let ingest = try server.exchange("POST", "/notifications", body: ServeSamples.notification(1), headers: [])
        #expect(ingest.status == 200)
        return server
    }

    @Test func theQueryTokenGets403AndNoTokenGets401() throws {
        let server = try Self.server()
        defer { server.stop() }
        let body = #"{"id":"g1","appUserId":"u1","entitlement":"pro","days":7}"#
        for (method, path) in [("POST", "/grants"), ("POST", "/grants/g1/revoke"), ("POST", "/credits"), ("POST", "/links"), ("GET", "/users/u1")] {
            let query = try server.exchange(method, path, body: method == "POST" ? body : nil, headers: ["Authorization: Bearer \(Self.queryToken)"])
            #expect(query.status == 403, "\(path): \(query.text)")
            #expect(query.json?["error"]?["code"] == "FORBIDDEN")
            let none = try server.exchange(method, path, body: method == "POST" ? body : nil)
            #expect(none.status == 401, "\(path)")
            let wrong = try server.exchange(method, path, body: method == "POST" ? body : nil, headers: ["Authorization: Bearer nope"])
            #expect(wrong.status == 401, "\(path)")
        }
        // Nothing was recorded by the refused requests.
        #expect(try server.engine.audit().events == 1)
        // The admin token opens the query endpoints too; health needs nothing.
        #expect(try server.exchange("GET", "/customers/\(ServeSamples.customer(1))", headers: Self.admin).status == 200)
        #expect(try server.exchange("GET", "/health").text == #"{"ok":true}"#)
    }

    @Test func grantsCreditsLinksAndTheAppUserOverHTTP() throws {
        let server = try Self.server()
        defer { server.stop() }
        let customer = ServeSamples.customer(1)
        func post(_ path: String, _ body: String) throws -> (Int, JSONValue?) {
            let response = try server.exchange("POST", path, body: body, headers: Self.admin)
            return (response.status, response.json)
        }

        var (status, json) = try post("/grants", #"{"id":"g1","appUserId":"user-1","entitlement":"vip","days":3,"force":true,"reason":"outage"}"#)
        #expect(status == 200)
        #expect(json == ["result": "appended", "id": "g1"])
        (status, json) = try post("/grants", #"{"id":"g1","appUserId":"user-1","entitlement":"vip","days":3,"force":true,"reason":"outage"}"#)
        #expect(status == 200 && json == ["result": "duplicate", "id": "g1"])
        (status, json) = try post("/grants", #"{"id":"g1","appUserId":"user-1","entitlement":"vip","days":4,"force":true,"reason":"outage"}"#)
        #expect(status == 409 && json?["error"]?["code"] == "GRANT_CONFLICT")
        (status, json) = try post("/grants", #"{"id":"g2","appUserId":"user-1","entitlement":"vipp","days":3}"#)
        #expect(status == 400 && json?["error"]?["code"] == "UNKNOWN_ENTITLEMENT")
        (status, json) = try post("/grants", #"{"id":"g3","appTransactionId":"\#(customer)","entitlement":"pro","from":2000000000000,"until":1999999999999}"#)
        #expect(status == 400 && json?["error"]?["code"] == "INVALID_GRANT")
        (status, json) = try post("/grants", #"{"id":"g4","appTransactionId":"1","entitlement":"pro","days":1}"#)
        #expect(status == 404 && json?["error"]?["code"] == "NOT_FOUND")
        (status, _) = try post("/grants", #"{"id":"g5","appUserId":"user-1","entitlement":"pro","days":1,"colour":"red"}"#)
        #expect(status == 400)

        (status, json) = try post("/credits", #"{"id":"c1","appUserId":"user-1","currency":"coins","units":25}"#)
        #expect(status == 200 && json == ["result": "appended", "id": "c1"])
        (status, json) = try post("/credits", #"{"id":"c2","appUserId":"user-1","currency":"coins","units":-26}"#)
        #expect(status == 409 && json?["error"]?["code"] == "INSUFFICIENT_BALANCE")
        (status, json) = try post("/credits", #"{"id":"c1","appUserId":"user-1","currency":"coins","units":24}"#)
        #expect(status == 409 && json?["error"]?["code"] == "ID_CONFLICT")

        (status, json) = try post("/links", #"{"id":"l1","appUserId":"user-1","appTransactionId":"\#(customer)"}"#)
        #expect(status == 200 && json == ["result": "appended", "id": "l1"])
        (status, json) = try post("/links", #"{"id":"l2","appUserId":"","appTransactionId":"\#(customer)"}"#)
        #expect(status == 400 && json?["error"]?["code"] == "INVALID_APP_USER_ID")

        let user = try server.exchange("GET", "/users/user-1", headers: Self.admin)
        #expect(user.status == 200, "\(user.text)")
        #expect(user.json?["appUserId"] == "user-1")
        #expect(user.json?["customers"]?.element(0)?["appTransactionId"] == .string(customer))
        #expect(user.json?["entitlements"]?["vip"]?["source"] == "grant")
        #expect(user.json?["entitlements"]?["vip"]?["grantId"] == "g1")
        #expect(user.json?["balances"] == ["coins": 25])
        #expect(user.json?["grants"]?.element(0)?["operator"] == "support-desk")
        #expect(user.json?["grants"]?.element(0)?["reason"] == "outage")
        #expect(try server.exchange("GET", "/users/nobody", headers: Self.admin).status == 404)

        (status, json) = try post("/grants/g1/revoke", "")
        #expect(status == 200 && json == ["result": "appended", "id": "g1"])
        (status, json) = try post("/grants/nope/revoke", "{}")
        #expect(status == 404 && json?["error"]?["code"] == "NOT_FOUND")
        let after = try server.exchange("GET", "/users/user-1", headers: Self.admin)
        #expect(after.json?["entitlements"]?["vip"]?["active"] == false)

        // Hash-chained, audited, each with the token's label as its operator; replay changes nothing.
        let audit = try server.engine.audit()
        #expect(audit.firstMismatch == nil)
        #expect(audit.events == 1 + 4)
        let lifecycle = try server.engine.lifecycle(since: 0, limit: nil).map(\.id)
        #expect(lifecycle.contains("GRANT_STARTED:g1") && lifecycle.contains("GRANT_REVOKED:g1"))
        let replay = try server.engine.replay()
        #expect(replay.changed == 0)
    }

    @Test func aFieldInTheQueryStringOrARepeatedMemberIsRefusedByName() throws {
        let server = try Self.server()
        defer { server.stop() }
        func post(_ path: String, _ body: String) throws -> (Int, String?) {
            let response = try server.exchange("POST", path, body: body, headers: Self.admin)
            guard case .string(let message)? = response.json?["error"]?["message"] else { return (response.status, nil) }
            return (response.status, message)
        }
        #expect(try post("/grants", #"{"id":"g1","appUserId":"user-1","entitlement":"pro","days":3}"#).0 == 200)
        // ?at= on a revocation is not where the revocation reads its moment: refused, not ignored.
        var (status, message) = try post("/grants/g1/revoke?at=2030-01-01T00:00:00Z", "")
        #expect(status == 400 && message?.contains("not in the query string") == true, "\(message ?? "")")
        (status, message) = try post("/credits?units=5", #"{"id":"c1","appUserId":"user-1","currency":"coins","units":1}"#)
        #expect(status == 400 && message?.contains("not in the query string") == true, "\(message ?? "")")
        // A member given twice is named, not reported as "not a JSON object".
        (status, message) = try post("/grants", #"{"id":"g2","appUserId":"user-1","entitlement":"pro","days":3,"id":"g3"}"#)
        #expect(status == 400 && message?.contains(#"duplicate key "id""#) == true, "\(message ?? "")")
        // Nothing but the first grant was recorded; the revocation still takes a body.
        #expect(try server.engine.audit().events == 2)
        #expect(try post("/grants/g1/revoke", #"{"at":"2030-01-01T00:00:00Z"}"#).0 == 200)
    }

    @Test func refusalsNameTheFieldsOfTheBodyNotOnlyTheCommandLinesFlags() throws {
        let server = try Self.server()
        defer { server.stop() }
        func message(_ path: String, _ body: String) throws -> String {
            let response = try server.exchange("POST", path, body: body, headers: Self.admin)
            guard case .string(let message)? = response.json?["error"]?["message"] else { return "" }
            return message
        }
        #expect(try message("/grants", #"{"id":"g1","appUserId":"u","entitlement":"vipp","days":3}"#).contains(#""force": true"#))
        #expect(try message("/grants", #"{"id":"g1","appUserId":"u","entitlement":"pro","days":0}"#).hasPrefix("days must be"))
        #expect(try message("/credits", #"{"id":"c1","appUserId":"u","currency":"coins","units":0}"#).hasPrefix("0 units"))
    }
}

extension JSONValue {
    /// The element at `index` of an array (`nil` for anything else).
    fileprivate func element(_ index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}
