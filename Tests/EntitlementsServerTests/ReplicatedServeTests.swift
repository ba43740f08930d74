import Entitlements
import Foundation
import Testing
import TestSupport

/// `serve` with replicated acknowledgments (contract section 15): `200` once the
/// replica holds the commit; `503` with Retry-After when Litestream does not confirm,
/// the notification kept locally, and its retry a `duplicate` once replicated.
@Suite("Replicated serve", .serialized)
struct ReplicatedServeTests {
    @Test("200 when replicated, 503 while Litestream is stopped, the retry a duplicate once it is back", .enabled(if: Litestream.available))
    func answersFollowTheReplica() throws {
        let workspace = try Workspace(name: "replicated-serve")
        let database = workspace.path("serve.sqlite")
        let litestream = try Litestream(database: database, in: workspace.folder)
        try workspace.addReplication(litestream.replicationSection(timeoutMs: 1500))
        let server = try TestServer(workspace: workspace)
        defer { server.stop() }
        try litestream.start()
        defer { litestream.stop() }

        let first = try server.exchange("POST", "/notifications", body: ServeSamples.notification(1))
        #expect(first.status == 200, "\(first.text)")
        #expect(text(first.json?["result"]) == "appended")

        litestream.stop()
        let unconfirmed = try server.exchange("POST", "/notifications", body: ServeSamples.notification(2))
        #expect(unconfirmed.status == 503, "\(unconfirmed.text)")
        #expect(unconfirmed.field("Retry-After") != nil)
        #expect(text(unconfirmed.json?["error"]?["code"]) == "REPLICATION_TIMEOUT", "\(unconfirmed.text)")

        try litestream.start()
        let retried = try server.exchange("POST", "/notifications", body: ServeSamples.notification(2))
        #expect(retried.status == 200, "\(retried.text)")
        #expect(text(retried.json?["result"]) == "duplicate", "kept locally while unconfirmed: \(retried.text)")
        let eventIds = [first, retried].compactMap { text($0.json?["eventId"]) }
        #expect(eventIds.count == 2)

        let restored = workspace.path("restored.sqlite")
        try litestream.restore(to: restored)
        let onReplica = try Probe(restored).eventIds()
        #expect(Set(eventIds).isSubset(of: onReplica), "acknowledged but not on the replica: \(Set(eventIds).subtracting(onReplica))")
    }
}
