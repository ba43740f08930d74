import Entitlements
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import EntitlementsServer

extension Reliability {
    /// `POST /notifications` while another process holds the database (specification
    /// sections 9 and 18): `503` while Apple still waits for the answer, and a server told
    /// to stop does not wait the lock out.
    @Suite("Serve: a database another writer holds")
    struct ServeBusyDatabaseTests {
        @Test("a database locked past three busy timeouts: 503 DATABASE_BUSY, nothing appended; the same notification once it is free")
        func busyIsAnsweredInTime() throws {
            let workspace = try Workspace(name: "serve-busy", busyTimeoutMilliseconds: 200)
            let server = try TestServer(workspace: workspace)
            defer { server.stop() }
            let holder = try Probe(workspace.path("serve.sqlite"))
            try holder.execute("BEGIN EXCLUSIVE")
            let body = ServeSamples.notification(1)
            let busy = try server.exchange("POST", "/notifications", body: body)
            #expect(busy.status == 503, "\(busy.text)")
            #expect(busy.json?["error"]?["code"] == "DATABASE_BUSY")
            try holder.execute("ROLLBACK")
            let retried = try server.exchange("POST", "/notifications", body: body)
            #expect(retried.status == 200 && retried.json?["result"] == "appended", "\(retried.text)")
        }

        @Test("a server stopped while a notification waits for the lock answers it 503 and ends without waiting the lock out")
        func stoppingEndsTheWait() throws {
            // A server that retried the batch after the stop would wait out three busy timeouts of
            // 8 s (24 s); this one gives up after the attempt under way (8 s at most).
            let workspace = try Workspace(name: "serve-busy-stop", busyTimeoutMilliseconds: 8_000)
            let server = try TestServer(workspace: workspace)
            let holder = try Probe(workspace.path("serve.sqlite"))
            try holder.execute("BEGIN EXCLUSIVE")
            defer { try? holder.execute("ROLLBACK") }
            let answer = Mutex<RawClient.Response?>(nil)
            let finished = DispatchSemaphore(value: 0)
            let body = ServeSamples.notification(2)
            let port = server.port
            Thread {
                let response = try? RawClient.exchange(port: port, "POST", "/notifications", body: body, headers: [])
                answer.withLock { $0 = response }
                finished.signal()
            }.start()
            // Once the request is in, the server is told to stop.
            #expect(TestServer.eventually { server.server.http.activeConnections > 0 })
            #expect(server.stop(timeout: 20), "the server waited for the lock")
            #expect(finished.wait(timeout: .now() + 10) == .success)
            let response = answer.withLock { $0 }
            #expect(response?.status == 503, "\(response?.text ?? "no answer")")
        }
    }
}
