import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// With replication the engine leaves every checkpoint to Litestream (specification section
/// 15): none after commits, none asked for (`checkpoint()`), none by a replay's own
/// connection, none when the engine closes. Without it, `checkpoint()` empties the `-wal`.
@Suite("Replication leaves checkpoints to Litestream")
struct ReplicationCheckpointTests {
    static func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    @Test("a replicated engine's replay, checkpoint() and closing leave the -wal as it is")
    func replicatedEngineNeverCheckpoints() throws {
        let folder = E2E.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("checkpoints.sqlite").path
        let history = History.generate(lines: 40, seed: 0xC4EC)
        do {
            let plain = try Engine(configuration: E2E.configuration(rules: Scenario.rules(version: "e2e-1")), databasePath: path)
            _ = try plain.ingest(history.lines.map { InputBytes($0.text) })
            try plain.checkpoint()
            #expect(Self.walSize(path) == 0, "the unreplicated engine's checkpoint empties the -wal")
        }
        var configuration = E2E.configuration()
        configuration.replication = ReplicationConfiguration(
            litestream: .init(socketPath: folder.appendingPathComponent("nobody.sock").path, timeoutMilliseconds: 100))
        do {
            let replicated = try Engine(configuration: configuration, databasePath: path)
            // A replay writes every projection anew, on a connection of its own.
            _ = try replicated.replay()
            try replicated.checkpoint()
            #expect(Self.walSize(path) > 0, "checkpointed by the replay or by checkpoint()")
        }
        #expect(Self.walSize(path) > 0, "checkpointed when the engine closed")
    }
}
