import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What `ingest` says when a file holds nothing, and when Ctrl-C stops it.
@Suite struct IngestNoticeTests {
    @Test("an empty input file (0 bytes, or blank lines only) says so on stderr and exits 0")
    func emptyInputFile() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        try Data().write(to: folder.appendingPathComponent("empty.ndjson"))
        try Data("\n  \n\n".utf8).write(to: folder.appendingPathComponent("blank.ndjson"))
        for name in ["empty.ndjson", "blank.ndjson"] {
            let run = try E2E.run(["ingest", "--db", "db.sqlite", "--config", config, name], in: folder)
            #expect(run.status == 0, "\(name): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(run.stdout)")
            #expect(run.stderr.contains("entitlements ingest: \(name) holds no input"), "\(name): \(run.stderr)")
        }
        // A file with input says nothing of the kind.
        let line = E2E.pki.sign(TestPayloads.transaction(transactionId: "2100000000000091", appTransactionId: "704200000000000091"))
        try Data((line + "\n").utf8).write(to: folder.appendingPathComponent("one.ndjson"))
        let run = try E2E.run(["ingest", "--db", "db.sqlite", "--config", config, "one.ndjson"], in: folder)
        #expect(run.status == 0)
        #expect(run.lines.first?["result"] == "appended")
        #expect(!run.stderr.contains("holds no input"), "\(run.stderr)")
    }

    @Test("Ctrl-C during ingest from standard input: exit 130 and one line saying what is committed")
    func interruptedIngest() throws {
        signal(SIGPIPE, SIG_IGN)
        let workspace = try Workspace(name: "interrupt")
        let pipe = Pipe()
        let running = try Tool.start(
            ["ingest", "--db", "db.sqlite", "--config", workspace.configPath], in: workspace.folder, stdinPipe: pipe, label: "sigint")
        defer { if running.process.isRunning { running.kill9() } }
        let line = E2E.pki.sign(TestPayloads.transaction(transactionId: "2100000000000092", appTransactionId: "704200000000000092"))
        try pipe.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
        // The line is acknowledged (committed) while standard input stays open.
        #expect(running.waitForOutput(lines: 1, timeout: 120))
        _ = kill(running.pid, SIGINT)
        #expect(running.waitForExit(timeout: 60))
        let outcome = running.wait(timeout: 60)
        try? pipe.fileHandleForWriting.close()
        #expect(!outcome.signaled, "\(outcome.status) \(outcome.stderr)")
        #expect(outcome.status == 130, "\(outcome.stderr)")
        #expect(outcome.lines.count == 1)
        let words = outcome.stderr.split(separator: "\n").filter { $0.contains("interrupted") }
        #expect(words.count == 1, "\(outcome.stderr)")
        #expect(words.first?.contains("committed") == true, "\(outcome.stderr)")
        #expect(try Probe(workspace.path("db.sqlite")).eventCount() == 1)
    }
}
