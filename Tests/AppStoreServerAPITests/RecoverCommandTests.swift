import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI

/// `entitlements recover` on a database restored from a replica (specification section 15):
/// audit, then Apple's notification history from the last receipt minus one hour.
@Suite struct RecoverCommandTests {
    /// A fixture serving the notification history, and `restored.sqlite` holding what the
    /// replica held: the first page, ingested by hand.
    static func restoredFirstPage(sourceLocation: SourceLocation = #_sourceLocation) throws -> SyncFixture {
        let fixture = try SyncFixture()
        fixture.serveNotifications()
        let firstPage = SyncScenario.notificationPages[0].map { TestPayloads.body(signedPayload: $0) }.joined(separator: "\n") + "\n"
        try Data(firstPage.utf8).write(to: fixture.folder.appendingPathComponent("first.ndjson"))
        let ingest = try Tool.entitlements(["ingest", "--config", fixture.configPath, "--db", "restored.sqlite", "first.ndjson"], in: fixture.folder)
        #expect(ingest.status == 0, "\(ingest.stderr)", sourceLocation: sourceLocation)
        return fixture
    }

    @Test func auditsThenFetchesFromTheLastReceiptLessAnHour() throws {
        let fixture = try Self.restoredFirstPage()
        let last = try #require(try fixture.engine("restored.sqlite").lastReceivedAt())

        let run = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", "restored.sqlite"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
        #expect(lines == [["audit": "ok", "startDate": .int(last - 3_600_000), "appended": 25, "duplicate": 20, "rejected": 0]])
        #expect(fixture.mock.requests.first?.json?["startDate"] == .int(last - 3_600_000))
        #expect(try fixture.engine("restored.sqlite").audit().events == 45)
    }

    /// Without `appStoreServerAPI` there is nothing to fetch with: the audit alone, its line
    /// (appended 0), and on standard error from when the senders must send again; events
    /// known missing (a later head) make it 1.
    @Test func withoutTheAPIItAuditsOnly() throws {
        let fixture = try Self.restoredFirstPage()
        let last = try #require(try fixture.engine("restored.sqlite").lastReceivedAt())
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.configPath)))) else {
            Issue.record("the fixture's configuration is not an object")
            return
        }
        config["appStoreServerAPI"] = nil
        let plain = fixture.folder.appendingPathComponent("no-api.json")
        try Data(JSONWriter.string(.object(config)).utf8).write(to: plain)

        let run = try Tool.entitlements(["recover", "--config", plain.path, "--db", "restored.sqlite"], in: fixture.folder)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        let lines = run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
        #expect(lines == [["audit": "ok", "startDate": .int(last - 3_600_000), "appended": 0, "duplicate": 0, "rejected": 0]])
        #expect(run.stderr.contains("no appStoreServerAPI") && run.stderr.contains(TimeArgument.iso8601(last - 3_600_000)), "\(run.stderr)")
        #expect(fixture.mock.requests.isEmpty)

        // The old head is ten events further: they are missing, and nothing can fetch them.
        let head = "30:" + String(repeating: "ab", count: 32)
        let short = try Tool.entitlements(["recover", "--config", plain.path, "--db", "restored.sqlite", "--expect-head", head], in: fixture.folder)
        #expect(short.status == 1, "\(short.stdout) \(short.stderr)")
        let line = short.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }.last
        #expect(line?["audit"] == "ok" && line?["missing"] == 10 && line?["appended"] == 0, "\(short.stdout)")

        let environment = try Tool.entitlements(["recover", "--config", plain.path, "--db", "restored.sqlite", "--environment", "Sandbox"], in: fixture.folder)
        #expect(environment.status == 2 && environment.stderr.contains("appStoreServerAPI"), "\(environment.stderr)")
        #expect(fixture.mock.requests.isEmpty)
    }

    @Test func aMissingDatabaseIsNotCreated() throws {
        let fixture = try SyncFixture()
        fixture.serveNotifications()
        let run = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", "nowhere.sqlite"], in: fixture.folder)
        #expect(run.status == 3)
        #expect(run.stderr.contains("DATABASE_NOT_FOUND"))
        #expect(!FileManager.default.fileExists(atPath: fixture.folder.appendingPathComponent("nowhere.sqlite").path))
        #expect(fixture.mock.requests.isEmpty)
    }

    @Test func aCatchUpTheReplicaDoesNotConfirmFailsTheRecoverWithOne() throws {
        let fixture = try Self.restoredFirstPage()
        // Replicated acknowledgments through a control socket nobody listens on: the
        // catch-up's first batch is committed locally and never confirmed.
        let url = URL(fileURLWithPath: fixture.configPath)
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: url))) else {
            Issue.record("the fixture's configuration is not an object")
            return
        }
        let socket = fixture.folder.appendingPathComponent("nobody.sock").path
        config["replication"] = ["litestream": ["socket": .string(socket), "timeoutMs": 300]]
        try Data(JSONWriter.string(.object(config)).utf8).write(to: url)

        let run = try Tool.entitlements(["recover", "--config", fixture.configPath, "--db", "restored.sqlite"], in: fixture.folder)
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("REPLICATION_TIMEOUT"), "\(run.stderr)")
        #expect(!run.stdout.contains("\"audit\":\"ok\""), "\(run.stdout)")
    }
}
