import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `entitlements deliver` and `webhooks status|redeliver`, with the receiver that
/// verifies every signature with the `standardwebhooks` package.
@Suite(.serialized) struct WebhookCommandTests {
    static let secret = WebhookTestData.secret

    /// A database with changes, and a configuration file naming the receiver.
    static func setUp(seed: UInt64, receiver: WebhookReceiver) throws -> (folder: URL, db: String, config: String, cursors: [Int64]) {
        let folder = E2E.folder()
        let db = folder.appendingPathComponent("webhooks.sqlite").path
        let cursors: [Int64]
        do {
            let engine = try E2E.engine(path: db)
            try WebhookTestData.ingest(seed: seed, customers: 10, into: engine)
            cursors = try engine.changes().map(\.cursor)
        }
        let path = try E2E.writeConfig(in: folder)
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))) else {
            throw ReceiverError(message: "the configuration is not an object")
        }
        config["webhooks"] = [["url": .string(receiver.url), "secret": .string(secret), "feeds": ["changes"], "retrySchedule": [50, 100]]]
        try Data(JSONWriter.string(.object(config)).utf8).write(to: URL(fileURLWithPath: path))
        return (folder, db, path, cursors)
    }

    /// Starts `entitlements` with its output in files (a pipe nobody reads could fill up).
    static func launch(_ arguments: [String], in folder: URL) throws -> Process {
        let process = Process()
        process.executableURL = E2E.binary
        process.arguments = arguments
        let name = UUID().uuidString.prefix(6)
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("out-\(name)").path, contents: nil)
        _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("err-\(name)").path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: folder.appendingPathComponent("out-\(name)"))
        process.standardError = try FileHandle(forWritingTo: folder.appendingPathComponent("err-\(name)"))
        try process.run()
        return process
    }

    /// The command line exits 2 for a bad webhook configuration, naming the field.
    @Test func aBadWebhookConfigurationExitsTwoNamingTheField() throws {
        let folder = E2E.folder()
        let config = folder.appendingPathComponent("bad.json")
        let json: JSONValue = [
            "bundleId": "com.example.app", "environment": "Sandbox", "rules": ["version": "1", "products": [:]],
            "webhooks": [["url": "https://a.example.com/hook", "secret": "nope"]],
        ]
        try Data(JSONWriter.string(json).utf8).write(to: config)
        let database = folder.appendingPathComponent("db.sqlite").path
        let run = try E2E.run(["deliver", "--once", "--db", database, "--config", config.path])
        #expect(run.status == 2)
        #expect(run.stderr.contains("webhooks[0].secret"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: database))
    }

    /// `deliver` needs an endpoint and a database that exists: without either it creates nothing.
    @Test func deliverCreatesNoDatabase() throws {
        let folder = E2E.folder()
        let database = folder.appendingPathComponent("missing.sqlite").path
        let json: JSONValue = ["bundleId": "com.example.app", "environment": "Sandbox", "rules": ["version": "1", "products": [:]]]
        let plain = folder.appendingPathComponent("plain.json")
        try Data(JSONWriter.string(json).utf8).write(to: plain)
        var run = try E2E.run(["deliver", "--once", "--db", database, "--config", plain.path])
        #expect(run.status == 2 && run.stderr.contains("\"webhooks\""), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: database))

        let hooks: JSONValue = [
            "bundleId": "com.example.app", "environment": "Sandbox", "rules": ["version": "1", "products": [:]],
            "webhooks": [["url": "https://a.example.com/hook", "secret": .string(Self.secret)]],
        ]
        let withEndpoint = folder.appendingPathComponent("hooks.json")
        try Data(JSONWriter.string(hooks).utf8).write(to: withEndpoint)
        run = try E2E.run(["deliver", "--once", "--db", database, "--config", withEndpoint.path])
        #expect(run.status == 3 && run.stderr.contains("DATABASE_NOT_FOUND"), "\(run.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("missing") }
        #expect(left.isEmpty, "\(left)")
    }

    /// `deliver` killed (kill -9) at a random moment mid-delivery and started again:
    /// every line arrives at least once, in order, none skipped, every signature
    /// verifies; SIGTERM ends it with 0; status shows no lag.
    @Test(
        .enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"),
        arguments: [UInt64(51), 52, 53])
    func deliverKilledMidDeliveryResumesWithoutSkipping(seed: UInt64) throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        let (folder, db, config, cursors) = try Self.setUp(seed: seed, receiver: receiver)
        try #require(cursors.count >= 4)
        var random = SplitMix64(seed: seed)
        // Each answer takes a few milliseconds, so that the kill lands mid-delivery.
        try receiver.setControl(["fail": [("changes:\(cursors[random.int(0..<cursors.count)])"): 2], "delayMs": 15])
        let killAfter = random.int(1..<cursors.count)

        let first = try Self.launch(["deliver", "--db", db, "--config", config], in: folder)
        #expect(receiver.wait { $0.count >= killAfter })
        usleep(UInt32(random.int(0..<20_000)))
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        #expect(first.terminationReason == .uncaughtSignal)

        let second = try Self.launch(["deliver", "--db", db, "--config", config], in: folder)
        #expect(receiver.wait { WebhookReceiver.allDelivered($0, cursors) })
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        #expect(second.terminationStatus == 0 && second.terminationReason == .exit)

        #expect(WebhookReceiver.problems(receiver.records(), expected: cursors) == [])
        let status = try E2E.run(["webhooks", "status", "--db", db, "--config", config])
        #expect(status.status == 0, "\(status.stderr)")
        let line = try #require(status.lines.first { $0.object?["feed"] == .string("changes") })
        #expect(line.object?["deliveredCursor"] == .int(cursors.last!) && line.object?["lag"] == .int(0))
        // The endpoint names the changes feed alone: no lifecycle position is kept for it.
        #expect(!status.lines.contains { $0.object?["feed"] == .string("lifecycle") })
    }

    /// `deliver --once`: 0 when every attempt succeeded (nothing due included), 1 when
    /// some failed; `webhooks redeliver` sends the feed again from a cursor.
    @Test(.enabled(if: WebhookReceiver.isAvailable, "needs python3 with the standardwebhooks package"))
    func deliverOnceAndRedeliver() throws {
        let receiver = try WebhookReceiver(secret: Self.secret)
        let (_, db, config, cursors) = try Self.setUp(seed: 54, receiver: receiver)
        try #require(cursors.count >= 3)
        let last = cursors[cursors.count - 1], before = cursors[cursors.count - 2]
        try receiver.setControl(["fail": [("changes:\(last)"): 1]])

        // The last line fails once: exit 1, every line before it delivered.
        var run = try E2E.run(["deliver", "--once", "--db", db, "--config", config])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.lines.count == cursors.count)
        #expect(run.lines.last?.object?["delivered"] == .bool(false) && run.lines.last?.object?["error"] == .string("HTTP 500"))
        // Its retry is due after 50 ms: a pass from then on delivers it. A pass with nothing
        // due is 0 too, so one that comes before the retry is due is followed by another.
        #expect(receiver.wait { _ in
            (try? E2E.run(["deliver", "--once", "--db", db, "--config", config]).status) == 0
                && WebhookReceiver.allDelivered(receiver.records(), cursors)
        })
        #expect(WebhookReceiver.allDelivered(receiver.records(), cursors))
        run = try E2E.run(["deliver", "--once", "--db", db, "--config", config])
        #expect(run.status == 0 && run.lines.isEmpty)

        // Again from the line before last.
        let count = receiver.records().count
        run = try E2E.run(["webhooks", "redeliver", "--url", receiver.url, "--feed", "changes", "--since", String(before - 1), "--db", db, "--config", config])
        #expect(run.status == 0, "\(run.stderr)")
        run = try E2E.run(["deliver", "--once", "--db", db, "--config", config])
        #expect(run.status == 0)
        #expect(receiver.records().dropFirst(count).map(\.id) == ["changes:\(before)", "changes:\(last)"])
        // Without --feed: the endpoint's one feed (it takes the changes feed alone).
        let again = receiver.records().count
        run = try E2E.run(["webhooks", "redeliver", "--url", receiver.url, "--since", String(before), "--db", db, "--config", config])
        #expect(run.status == 0 && run.lines.first?.object?["feed"] == .string("changes"), "\(run.stderr)")
        run = try E2E.run(["deliver", "--once", "--db", db, "--config", config])
        #expect(run.status == 0)
        #expect(receiver.records().dropFirst(again).map(\.id) == ["changes:\(last)"])

        // Redelivery of an endpoint that is not configured, or from the future: exit 2.
        run = try E2E.run(["webhooks", "redeliver", "--url", "https://elsewhere.example.com/", "--feed", "changes", "--since", "0", "--db", db, "--config", config])
        #expect(run.status == 2 && run.stderr.contains("elsewhere"))
        run = try E2E.run(["webhooks", "redeliver", "--url", receiver.url, "--feed", "changes", "--since", String(last + 10), "--db", db, "--config", config])
        #expect(run.status == 2 && run.stderr.contains("future"))
        run = try E2E.run(["webhooks", "status", "--url", receiver.url, "--db", db, "--config", config])
        #expect(run.status == 2)
    }
}

extension JSONValue {
    fileprivate var object: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }
}
