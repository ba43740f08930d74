import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// The command line as users and acceptance tests drive it (specification section 6).
@Suite struct CommandLineTests {
    @Test func helpExplainsEveryCommand() throws {
        let overview = try E2E.run(["--help"])
        #expect(overview.status == 0)
        for command in ["ingest", "query", "replay", "verify", "audit", "demo"] {
            #expect(overview.stdout.contains("entitlements \(command)"))
            let help = try E2E.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.hasPrefix("entitlements \(command)"))
        }
        #expect(try E2E.run(["ingest", "--help"]).stdout.contains("--workers"))
        #expect(try E2E.run(["query", "--help"]).stdout.contains("--at TIME"))
    }

    @Test func usageErrorsExitTwoAndSayWhatWasExpected() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let cases: [([String], String)] = [
            ([], "USAGE"),
            (["frobnicate"], "unknown command"),
            (["ingest", "--config", config, "--bogus"], "unknown option --bogus"),
            (["ingest", "--config"], "--config needs a value"),
            (["ingest", "--config", config, "--db", ""], "--db needs a path, got an empty one"),
            (["query", "--config", config, "--db=", "--app-transaction-id", "1"], "--db needs a path, got an empty one"),
            (["ingest"], "--config PATH is required"),
            (["recover"], "--config PATH is required"),
            (["query", "--config", config], "give exactly one of"),
            (["query", "--config", config, "--app-transaction-id", "1", "--at", "soon"], "--at expects milliseconds"),
            (["demo", "extra"], "demo takes no arguments"),
            (["query", "--config", config, "--app-transaction-id", "1", "--app-transaction-id", "2"], "--app-transaction-id is given more than once"),
            (["link", "--config", config, "--id", "l1", "--app-user-id", "a", "--app-user-id=b", "--app-transaction-id", "1"], "--app-user-id is given more than once"),
        ]
        for (arguments, expected) in cases {
            let run = try E2E.run(arguments, in: folder)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.contains(expected), "\(arguments): \(run.stderr)")
        }
    }

    @Test func badConfigurationNamesTheField() throws {
        let folder = E2E.folder()
        let cases: [(String, String)] = [
            (#"{"bundleId":"com.example.app","environment":"Prod","rules":{"version":"1"}}"#, "\"environment\""),
            (#"{"bundleId":"com.example.app","environment":"Production","rules":{"version":"1"}}"#, "\"appAppleId\""),
            (#"{"environment":"Sandbox","rules":{"version":"1"}}"#, "\"bundleId\""),
            (#"{"bundleId":5,"environment":"Sandbox","rules":{"version":"1"}}"#, "expected a string such as \"com.example.app\", found number"),
            (#"{"bundleId":"a","environment":"Sandbox","rules":{"version":"1","products":{"p":{"durationDays":-1}}}}"#, "durationDays"),
            (#"{"bundleId":"a","environment":"Sandbox","rules":{"version":"1"},"rootCertificates":["missing.pem"]}"#, "rootCertificates[0]"),
            (#"{"bundleId":"a","environment":"Sandbox"}"#, "\"rules\""),
            ("not json", "not valid JSON"),
        ]
        for (text, field) in cases {
            let path = folder.appendingPathComponent("bad.json").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let run = try E2E.run(["query", "--config", path, "--app-transaction-id", "1"], in: folder)
            #expect(run.status == 2, "\(text)")
            #expect(run.stderr.contains(field), "\(text): \(run.stderr)")
        }
    }

    @Test func aConfigurationWithAByteOrderMarkIsRead() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let marked = folder.appendingPathComponent("marked.json")
        try Data([0xEF, 0xBB, 0xBF] + Array(try Data(contentsOf: URL(fileURLWithPath: config)))).write(to: marked)
        let run = try E2E.run(["query", "--config", marked.path, "--app-transaction-id", "1"], in: folder)
        // Read as the same configuration: the database is what is missing.
        #expect(run.status == 3 && run.stderr.contains("DATABASE_NOT_FOUND"), "\(run.stderr)")
    }

    @Test func ingestQueryReplayThroughTheCommandLine() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let t0 = TestPayloads.january2025
        let input = [
            E2E.notification(
                "SUBSCRIBED", "INITIAL_BUY", uuid: "22222222-0000-4000-8000-000000000001", signed: t0 + 100,
                transaction: TestPayloads.transaction(signedDate: t0 + 50, appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138"),
                renewal: TestPayloads.renewalInfo(signedDate: t0 + 50)),
            "garbage",
        ].joined(separator: "\n")
        let inputFile = folder.appendingPathComponent("in.ndjson")
        try Data(input.utf8).write(to: inputFile)
        let ingest = try E2E.run(["ingest", "--config", config, inputFile.path], in: folder)
        #expect(ingest.status == 1)  // something was rejected
        #expect(ingest.lines.count == 2)
        #expect(ingest.lines[0] == [
            "input": 1, "result": "appended", "kind": "notification", "eventId": "22222222-0000-4000-8000-000000000001",
            "appTransactionId": "704000000000000001",
        ])
        #expect(ingest.lines[1]["result"] == "rejected")
        #expect(ingest.lines[1]["error"]?["code"] == "MALFORMED_INPUT")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("entitlements.sqlite").path))

        let query = try E2E.run(["query", "--config", config, "--app-transaction-id", "704000000000000001", "--at", "\(t0 + 86_400_000)"], in: folder)
        #expect(query.status == 0)
        let answer = try #require(query.lines.first)
        #expect(answer["at"] == .int(t0 + 86_400_000))
        #expect(answer["entitlements"]?["pro"]?["active"] == true)
        #expect(answer["subscriptions"]?.arrayCount == 1)
        #expect(answer["balances"] == .object(JSONObject()))

        let byToken = try E2E.run(["query", "--config", config, "--app-account-token", "7e3fb20b-4cdb-47cc-936d-99d65f608138", "--at", "\(t0 + 86_400_000)"], in: folder)
        #expect(byToken.status == 0)
        #expect(byToken.lines.first?["appTransactionIds"] == ["704000000000000001"])
        #expect(byToken.lines.first?["entitlements"]?["pro"]?["active"] == true)

        let before = try E2E.run(["query", "--config", config, "--app-transaction-id", "704000000000000001", "--at", "\(t0 - 86_400_000)"], in: folder)
        #expect(before.lines.first?["entitlements"] == .object(JSONObject()))
        #expect(before.lines.first?["subscriptions"] == .array([]))

        let missing = try E2E.run(["query", "--config", config, "--original-transaction-id", "999"], in: folder)
        #expect(missing.status == 1)
        #expect(missing.lines.first?["error"]?["code"] == "NOT_FOUND")

        let replay = try E2E.run(["replay", "--config", config], in: folder)
        #expect(replay.status == 0)
        #expect(replay.lines.first == ["events": 1, "appTransactionIds": 1, "changed": 0, "rulesVersion": "e2e-1"])

        let audit = try E2E.run(["audit", "--config", config], in: folder)
        #expect(audit.status == 0)
        #expect(audit.lines.first?["ok"] == true)
    }

    /// Fed from standard input, each line's result comes back after its batch
    /// is committed and before the input ends: a webhook can take it as the ack.
    @Test func standardInputIsAcknowledgedLineByLineBeforeTheInputEnds() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let process = Process()
        process.executableURL = E2E.binary
        process.arguments = ["ingest", "--config", config]
        process.currentDirectoryURL = folder
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        for n in 1...3 {
            let line = E2E.notification(
                "DID_RENEW", uuid: "33333333-0000-4000-8000-00000000000\(n)", signed: TestPayloads.january2025 + Int64(n),
                transaction: TestPayloads.transaction(transactionId: "20000000000000\(n)0", signedDate: TestPayloads.january2025 + Int64(n)))
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
            // Read this line's acknowledgment while stdin is still open.
            var received = Data()
            while !received.contains(0x0A) {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                received.append(chunk)
            }
            let ack = try JSONParser().parse(Array(received))
            #expect(ack["result"] == "appended")
            #expect(ack["eventId"] == .string("33333333-0000-4000-8000-00000000000\(n)"))
            // Committed: another connection sees it now.
            let check = try E2E.run(["query", "--config", config, "--app-transaction-id", "704000000000000001"], in: folder)
            #expect(check.status == 0)
        }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func demoRunsFromAnyDirectoryAndWritesNothingThere() throws {
        let folder = E2E.folder()
        let run = try E2E.run(["demo"], in: folder)
        #expect(run.status == 0)
        #expect(run.stdout.contains("Customer 704100000000000001"))
        #expect(run.stdout.contains("grace_period"))
        #expect(run.stdout.contains("249 coins"))
        // A refund request answered: 250 coins spent, half of the second pack consumed.
        #expect(run.stdout.contains(#""consumptionPercentage":50000"#))
        #expect(run.stdout.contains("production-test-notification.json: verified"))
        #expect(run.stdout.contains("0 rejected"))
        // The old otid: purchase joined its appTransactionId; App Review's sandbox purchase sits beside production data.
        #expect(run.stdout.contains("answers as  704100000000000007"))
        #expect(run.stdout.contains("environment   Sandbox") && run.stdout.contains("environment   Production"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test func realAppleSamplesVerifyAndIngestThroughTheCommandLine() throws {
        let folder = E2E.folder()
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/real")
        let config = folder.appendingPathComponent("apple.json").path
        try Data(#"{"bundleId":"com.nineton.taller","appAppleId":6450284872,"environment":"Production","rules":{"version":"1"}}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        let sample = fixtures.appendingPathComponent("production-test-notification.json").path
        let verify = try E2E.run(["verify", "--config", config, sample], in: folder)
        #expect(verify.status == 0)
        #expect(verify.lines.first?["result"] == "verified")
        #expect(verify.lines.first?["payload"]?["notificationType"] == "TEST")
        let ingest = try E2E.run(["ingest", "--config", config, sample], in: folder)
        #expect(ingest.status == 0)
        #expect(ingest.lines.first == [
            "input": 1, "result": "appended", "kind": "notification", "eventId": "2e2a6ce0-ec9f-4037-b1bf-618af85527bd", "appTransactionId": nil,
        ])
        // Replay counts the log's events: the TEST notification is one, though it is about no customer.
        let replay = try E2E.run(["replay", "--config", config], in: folder)
        #expect(replay.status == 0)
        #expect(replay.lines.first?["events"] == 1, "\(replay.stdout)")
        // Audit re-verifies the JWS given back from the parts the log keeps.
        let audit = try E2E.run(["audit", "--config", config], in: folder)
        #expect(audit.status == 0 && audit.lines.first?["ok"] == true, "\(audit.stdout) \(audit.stderr)")
        let sandbox = folder.appendingPathComponent("sandbox.json").path
        try Data(#"{"bundleId":"com.goodheartapp","environment":"Sandbox","rules":{"version":"1"}}"#.utf8).write(to: URL(fileURLWithPath: sandbox))
        let transaction = try E2E.run(
            ["verify", "--config", sandbox, fixtures.appendingPathComponent("sandbox-consumable-transaction.json").path], in: folder)
        #expect(transaction.lines.first?["payload"]?["transactionId"] == "2000000847061981")
        let wrongEnvironment = try E2E.run(["verify", "--config", sandbox, sample], in: folder)
        #expect(wrongEnvironment.status == 1)

        // As ingest numbers its lines: each line names its input, an empty page is one line.
        let lines = folder.appendingPathComponent("lines.ndjson")
        let transactionJSON = try String(contentsOf: fixtures.appendingPathComponent("sandbox-consumable-transaction.json"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: "")
        try Data((transactionJSON + "\n\n" + #"{"signedTransactions":[],"hasMore":false}"# + "\n" + "not json" + "\n").utf8).write(to: lines)
        let numbered = try E2E.run(["verify", "--config", sandbox, lines.path], in: folder)
        #expect(numbered.status == 1)
        #expect(numbered.lines.count == 3, "\(numbered.stdout)")
        #expect(numbered.lines.first?["input"] == 1 && numbered.lines.first?["result"] == "verified")
        #expect(numbered.lines.dropFirst().first == ["input": 3, "result": "empty"])
        #expect(numbered.lines.last?["input"] == 4 && numbered.lines.last?["result"] == "rejected")
    }
}
