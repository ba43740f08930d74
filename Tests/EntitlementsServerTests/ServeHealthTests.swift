import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// `GET /health`: a liveness probe that needs no token (specification section 9).
    @Suite("Serve: health without a token")
    struct ServeHealth {
        @Test("HEAD is answered as GET without the body, on a connection that carries the next request")
        func headIsGetWithoutTheBody() throws {
            let server = try TestServer(token: "s3cret-token-0123456789")
            let client = try RawClient(port: server.port)
            #expect(client.send(RawClient.request("HEAD", "/health")))
            let head = try #require(client.response(bodyless: true))
            #expect(head.status == 200)
            #expect(head.field("Content-Length") == "11")
            #expect(head.body.isEmpty)
            // Guarded as GET is, and no body either.
            #expect(client.send(RawClient.request("HEAD", "/customers/1")))
            let guarded = try #require(client.response(bodyless: true))
            #expect(guarded.status == 401 && guarded.body.isEmpty)
            // Nothing was left on the connection: the next answer is the next request's.
            #expect(client.send(RawClient.request("GET", "/health")))
            #expect(client.response()?.text == #"{"ok":true}"#)
        }

        @Test("GET /health needs no token and answers exactly {\"ok\":true}, token set or not; the other endpoints keep their guard")
        func healthWithoutToken() throws {
            for token in ["s3cret-token-0123456789", nil] as [String?] {
                let server = try TestServer(token: token)
                let health = try server.exchange("GET", "/health")
                #expect(health.status == 200, "token \(token ?? "none")")
                #expect(health.text == #"{"ok":true}"#, "\(health.text)")
                let wrong = try server.exchange("GET", "/health", headers: ["Authorization: Bearer wrong"])
                #expect(wrong.status == 200)
                #expect(wrong.text == #"{"ok":true}"#)
                if token != nil {
                    for path in ["/customers/1", "/changes", "/lifecycle", "/customers/1/history"] {
                        #expect(try server.exchange("GET", path).status == 401, "\(path)")
                    }
                    #expect(try server.exchange("POST", "/transactions", body: "x").status == 401)
                }
            }
        }

        @Test("404, 405 and a malformed path name the request's path only to a caller with the token (or when none is set)")
        func errorsEchoThePathOnlyToReaders() throws {
            let token = "s3cret-token-0123456789"
            let server = try TestServer(token: token)
            let open = try TestServer()
            let requests: [(method: String, path: String, status: Int)] = [
                ("GET", "/secret-probe/etc/passwd", 404), ("GET", "/notifications", 405), ("GET", "/customers/%zz-probe", 400),
            ]
            for request in requests {
                let stranger = try server.exchange(request.method, request.path)
                #expect(stranger.status == request.status, "\(stranger.text)")
                #expect(stranger.json?["error"]?["message"] != nil)
                #expect(!stranger.text.contains("probe") && !stranger.text.contains("/notifications"), "\(stranger.text)")
                for (answering, headers) in [(server, ["Authorization: Bearer \(token)"]), (open, [])] {
                    let reader = try answering.exchange(request.method, request.path, headers: headers)
                    #expect(reader.status == request.status)
                    #expect(reader.text.contains(request.path), "\(reader.text)")
                }
            }
        }
    }
}
