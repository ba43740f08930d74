import Foundation
import Testing
import TestSupport

/// `demo --keep DIR`: the demo's database, configuration and samples stay in DIR,
/// and every command works on them.
@Suite struct DemoKeepTests {
    @Test("demo --keep DIR leaves the database, configuration and samples, and prints the commands to try")
    func keepLeavesTheDemoToExplore() throws {
        let workingDirectory = E2E.folder()
        let kept = E2E.folder().appendingPathComponent("explore")
        let run = try E2E.run(["demo", "--keep", kept.path], in: workingDirectory)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: workingDirectory.path).isEmpty)
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: kept.path))
        #expect(files.isSuperset(of: ["demo.sqlite", "config.json", "test-root.pem", "histories.ndjson", "tour.json"]), "\(files)")
        #expect(run.stdout.contains("Try next:"))
        #expect(run.stdout.contains("entitlements query --db demo.sqlite --config config.json --app-transaction-id 704100000000000001"))
        #expect(run.stdout.contains("(kept)"))

        // The printed commands work there, on the kept database.
        let options = ["--db", "demo.sqlite", "--config", "config.json"]
        let query = try E2E.run(["query"] + options + ["--app-transaction-id", "704100000000000001"], in: kept)
        #expect(query.status == 0, "\(query.stderr)")
        #expect(query.stdout.contains(#""appTransactionId":"704100000000000001""#))
        #expect(query.stderr.isEmpty, "\(query.stderr)")
        let audit = try E2E.run(["audit"] + options, in: kept)
        #expect(audit.status == 0, "\(audit.stderr)")
        let again = try E2E.run(["ingest"] + options + ["histories.ndjson"], in: kept)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(!again.lines.isEmpty && again.lines.allSatisfy { $0["result"] == "duplicate" || $0["result"] == "empty" }, "\(again.stdout)")

        // A folder that already holds a demo is refused, and left as it was.
        let before = try Data(contentsOf: kept.appendingPathComponent("demo.sqlite"))
        let refused = try E2E.run(["demo", "--keep", kept.path], in: workingDirectory)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("already exists"), "\(refused.stderr)")
        #expect(try Data(contentsOf: kept.appendingPathComponent("demo.sqlite")) == before)
        #expect(try E2E.run(["demo", "--keep"], in: workingDirectory).status == 2)
    }
}
