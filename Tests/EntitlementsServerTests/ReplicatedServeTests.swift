import Entitlements
import Foundation
import Testing
import TestSupport

/// `serve` with replicated acknowledgments (specification section 15): `200` once the
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

    @Test("concurrent notifications: at most one request to Litestream per committed batch (group commit), all on the replica", .enabled(if: Litestream.available))
    func oneConfirmationPerBatch() throws {
        let workspace = try Workspace(name: "replicated-group")
        let litestream = try Litestream(database: workspace.path("serve.sqlite"), in: workspace.folder)
        try workspace.addReplication(litestream.replicationSection(timeoutMs: 30_000))
        let server = try TestServer(workspace: workspace)
        defer { server.stop() }
        try litestream.start()
        defer { litestream.stop() }

        let clients = 16, each = 4
        let answers = Locked([Int: RawClient.Response]())
        // Threads of their own (concurrentPerform would run only as many clients as there are cores).
        let bodies = (0..<(clients * each)).map { ServeSamples.notification(100 + $0) }
        let group = DispatchGroup()
        for client in 0..<clients {
            group.enter()
            Thread {
                for k in 0..<each {
                    let index = client * each + k
                    if let response = try? server.exchange("POST", "/notifications", body: bodies[index]) {
                        answers.withLock { $0[index] = response }
                    }
                }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 300) == .success)
        let all = answers.withLock { $0 }
        #expect(all.count == clients * each)
        #expect(all.values.allSatisfy { $0.status == 200 }, "\(all.values.filter { $0.status != 200 }.map(\.text).prefix(2))")
        let batches = server.server.ingestStatistics.batches
        // A confirmation covers every batch committed before it was asked for: the next batch
        // commits while the replica confirms one, and one request may cover several.
        #expect(server.engine.replicationRequests >= 1 && server.engine.replicationRequests <= batches, "\(server.engine.replicationRequests) requests for \(batches) batches")
        print("replicated serve: \(clients * each) notifications from \(clients) clients in \(batches) batches, \(server.engine.replicationRequests) requests to Litestream")

        let restored = workspace.path("restored.sqlite")
        try litestream.restore(to: restored)
        let onReplica = try Probe(restored).eventIds()
        let acknowledged = Set(all.values.compactMap { text($0.json?["eventId"]) })
        #expect(acknowledged.count == clients * each)
        #expect(acknowledged.isSubset(of: onReplica))
    }
}
