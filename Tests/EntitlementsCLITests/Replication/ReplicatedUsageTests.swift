import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// A usage record with replicated acknowledgments (specification section 15): without
/// Litestream's confirmation it is not acknowledged (`REPLICATION_TIMEOUT`), yet kept
/// locally, so the same usage id sent again is a `duplicate`.
@Suite("Replicated usage")
struct ReplicatedUsageTests {
    @Test("a usage Litestream does not confirm throws REPLICATION_TIMEOUT, and is a duplicate when sent again")
    func unconfirmedUsageIsKept() throws {
        let folder = E2E.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("usage.sqlite").path
        let t0 = UsageConsumptionTests.t0, day = UsageConsumptionTests.day
        do {
            let plain = try Engine(configuration: E2E.configuration(), databasePath: path)
            _ = try plain.ingest([InputBytes(UsageConsumptionTests.coins("3000000000000001", purchase: t0 + day))])
        }
        var configuration = E2E.configuration()
        configuration.replication = ReplicationConfiguration(
            litestream: .init(socketPath: folder.appendingPathComponent("nobody.sock").path, timeoutMilliseconds: 200))
        let replicated = try Engine(configuration: configuration, databasePath: path)
        #expect(replicated.isReplicated)
        let spend = UsageConsumptionTests.spend("u1", 30, at: t0 + 2 * day)
        do {
            _ = try replicated.usage(spend)
            Issue.record("acknowledged without the replica's confirmation")
        } catch {
            #expect(error.code == .replicationTimeout, "\(error)")
        }
        // Refusals write nothing and are answered without the replica.
        #expect(UsageConsumptionTests.refusal(try replicated.usage(UsageConsumptionTests.spend("u2", 1_000, at: t0 + 2 * day))) == "INSUFFICIENT_BALANCE")

        let plain = try Engine(configuration: E2E.configuration(), databasePath: path)
        guard case .recorded(let again) = try plain.usage(spend) else {
            Issue.record("u1 refused when sent again")
            return
        }
        #expect(again.outcome == .duplicate)
        #expect(again.balance == 70)
    }
}
