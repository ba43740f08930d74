import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// A real restore (Litestream, file replica) whose newest events never reached the replica
/// (specification section 15): `audit` says how many are missing once it knows the old head,
/// and `recover` reports them and brings them back from Apple's notification history.
@Suite("Recover: a restored database missing its newest events")
struct RecoverAfterRestoreTests {
    /// The primary holds pages 0 and 1 of Apple's history (40 events); the replica only page 0
    /// (Litestream was killed before page 1 was ingested). Returns the fixture, the Litestream
    /// that can restore the replica, and the primary's head (`SEQ:HASH`).
    private static func primaryAhead() throws -> (SyncFixture, Litestream, String)? {
        guard Litestream.available else {
            print("notice: litestream is not installed: the restore-and-recover test with a real file replica is skipped")
            return nil
        }
        let fixture = try SyncFixture()
        fixture.serveNotifications()
        for (index, name) in ["page0.ndjson", "page1.ndjson"].enumerated() {
            let lines = SyncScenario.notificationPages[index].map { TestPayloads.body(signedPayload: $0) }.joined(separator: "\n") + "\n"
            try Data(lines.utf8).write(to: fixture.folder.appendingPathComponent(name))
        }
        let primary = fixture.folder.appendingPathComponent("primary.sqlite").path
        let first = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", primary, "page0.ndjson"], in: fixture.folder)
        #expect(first.status == 0, "\(first.stderr)")
        let litestream = try Litestream(database: primary, in: fixture.folder, syncInterval: "100ms")
        // Started once the first page is committed, and confirmed synced: the replica holds it.
        try litestream.start()
        litestream.kill9()
        // Committed (and acknowledged: no replication configured) after Litestream died: never replicated.
        let second = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", primary, "page1.ndjson"], in: fixture.folder)
        #expect(second.status == 0, "\(second.stderr)")
        let audit = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", primary], in: fixture.folder)
        let line = try #require(try? JSONParser().parse(audit.stdout.split(separator: "\n").last.map(String.init) ?? ""), "\(audit.stdout)")
        #expect(audit.status == 0 && line["headSeq"] == .int(40), "\(audit.stdout) \(audit.stderr)")
        guard case .int(let seq)? = line["headSeq"], case .string(let hash)? = line["headHash"] else {
            Issue.record("audit printed no head: \(audit.stdout)")
            return nil
        }
        return (fixture, litestream, "\(seq):\(hash)")
    }

    private static func json(_ stdout: String) -> [JSONValue] {
        stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
    }

    @Test("restored in place beside the old head record: audit counts 20 missing events, recover reports them and Apple's history brings them back")
    func restoredInPlace() throws {
        guard let (fixture, litestream, oldHead) = try Self.primaryAhead() else { return }
        let folder = fixture.folder
        let restored = folder.appendingPathComponent("restored.sqlite").path
        try litestream.restore(to: restored)

        // Without the old head the restored log is a valid, shorter chain: audit passes.
        let blind = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", restored], in: folder)
        #expect(blind.status == 0, "\(blind.stdout) \(blind.stderr)")
        #expect(Self.json(blind.stdout).last?["headSeq"] == .int(20))

        // Restored in place, the old machine's head record is still beside it.
        try FileManager.default.copyItem(atPath: folder.appendingPathComponent("primary.sqlite-head").path, toPath: restored + "-head")
        let audit = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", restored], in: folder)
        #expect(audit.status == 1, "\(audit.stdout) \(audit.stderr)")
        let report = try #require(Self.json(audit.stdout).last, "\(audit.stdout)")
        #expect(report["ok"] == .bool(false))
        #expect(report["missingEvents"] == .int(20), "\(audit.stdout)")
        #expect(text(report["firstMismatch"]?["problem"])?.contains("20 events missing") == true, "\(audit.stdout)")

        let last = try #require(try fixture.engine("restored.sqlite").lastReceivedAt())
        let recover = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", restored], in: folder)
        #expect(recover.status == 0, "\(recover.stdout) \(recover.stderr)")
        #expect(
            Self.json(recover.stdout)
                == [["audit": "ok", "missing": 20, "startDate": .int(last - 3_600_000), "appended": 25, "duplicate": 20, "rejected": 0]],
            "\(recover.stdout)")
        #expect(recover.stderr.contains("20 events before the old head"), "\(recover.stderr)")

        // Back: the same notifications in the same order, so the log reaches the old head itself,
        // and the head record follows the caught-up log.
        let after = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", restored, "--expect-head", oldHead], in: folder)
        #expect(after.status == 0, "\(after.stdout) \(after.stderr)")
        let caughtUp = try #require(Self.json(after.stdout).last)
        #expect(caughtUp["events"] == .int(45))
        #expect(caughtUp["recordedHead"]?["seq"] == .int(45))
        #expect(caughtUp["missingEvents"] == nil)
    }

    @Test("restored on a new machine, the old head given: audit --expect-head and recover --expect-head count the missing events")
    func restoredElsewhereWithTheOldHead() throws {
        guard let (fixture, litestream, oldHead) = try Self.primaryAhead() else { return }
        let folder = fixture.folder
        let restored = folder.appendingPathComponent("new-machine.sqlite").path
        try litestream.restore(to: restored)
        #expect(!FileManager.default.fileExists(atPath: restored + "-head"))

        let audit = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", restored, "--expect-head", oldHead], in: folder)
        #expect(audit.status == 1, "\(audit.stdout) \(audit.stderr)")
        #expect(Self.json(audit.stdout).last?["missingEvents"] == .int(20), "\(audit.stdout)")

        let recover = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", restored, "--expect-head", oldHead], in: folder)
        #expect(recover.status == 0, "\(recover.stdout) \(recover.stderr)")
        let line = try #require(Self.json(recover.stdout).last, "\(recover.stdout)")
        #expect(line["audit"] == "ok")
        #expect(line["missing"] == .int(20))
        #expect(line["appended"] == .int(25))
        #expect(line["duplicate"] == .int(20))

        let after = try Tool.entitlements(["audit", "--config", fixture.configPath, "--db", restored, "--expect-head", oldHead], in: folder)
        #expect(after.status == 0, "\(after.stdout) \(after.stderr)")
        #expect(Self.json(after.stdout).last?["events"] == .int(45))

        // A head the restored log contradicts (another hash at its own end) is a failed audit: nothing fetched.
        let requests = fixture.mock.requests.count
        let forged = "20:" + String(repeating: "ab", count: 32)
        let refused = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", restored, "--expect-head", forged], in: folder)
        #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
        #expect(Self.json(refused.stdout).last?["audit"] == "failed", "\(refused.stdout)")
        #expect(fixture.mock.requests.count == requests)
    }
}
