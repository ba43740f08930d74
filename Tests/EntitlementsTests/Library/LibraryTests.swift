import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

/// The library as a server embeds it: `async` methods that run on the engine's own
/// threads, answers that are `Encodable` to exactly the command line's JSON, and
/// audit and replay that never hold up an ingest.
@Suite(.serialized) struct LibraryTests {

    /// Keys sorted at every level: the same JSON whatever order an encoder chose.
    static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements): return .array(elements.map(canonical))
        case .object(let object):
            return .object(JSONObject(object.members.sorted { $0.key < $1.key }.map { ($0.key, canonical($0.value)) }))
        default: return value
        }
    }

    static func parse(_ text: some StringProtocol) throws -> JSONValue { try JSONParser().parse(Array(text.utf8)) }

    /// `JSONEncoder` with sorted keys writes the command line's bytes, key order aside
    /// (Foundation's JSONEncoder on Linux orders keys by the process's hash seed otherwise).
    static func encoded(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test("QueryAnswer and IngestResult encode to exactly what the command line prints, byte for byte (keys sorted)")
    func encodableEqualsTheCommandLine() async throws {
        let workspace = try Workspace(name: "library-encodable")
        let history = History.generate(lines: 40, seed: 0x17)
        let file = try workspace.write(lines: history.lines.map(\.text), to: "all.ndjson")
        let cliIngest = try workspace.cli("ingest", db: "cli.sqlite", [file.path])
        #expect(cliIngest.status == 0 || cliIngest.status == 1, "\(cliIngest.stderr)")

        // The same documents through the async library, into another database.
        let engine = try workspace.engine("library.sqlite")
        let documents = history.lines.enumerated().map { InputBytes(bytes: Array($1.text.utf8), number: $0 + 1) }
        let results: [IngestResult] = try await engine.ingest(documents)
        let cliLines = cliIngest.lines
        #expect(results.count == cliLines.count)
        for (result, line) in zip(results, cliLines) {
            #expect(try Self.encoded(result) == JSONWriter.string(Self.canonical(try Self.parse(line))))
        }

        let at = TestPayloads.january2025 + 40 * 86_400_000
        for customer in history.customers.prefix(6) + ["704999999999999999"] {
            let cli = try workspace.cli("query", db: "cli.sqlite", ["--app-transaction-id", customer, "--at", "\(at)"])
            let answer: QueryAnswer = try await engine.query(.appTransactionId(customer), at: at)
            let line = cli.stdout.trimmingCharacters(in: .newlines)
            // An empty answer says how the command ended, not only that nothing parsed.
            guard !line.isEmpty else {
                Issue.record(
                    "query \(customer) printed nothing: exit \(cli.status)\(cli.signaled ? " (signal)" : ""), \(cli.seconds) s, stderr: \(cli.stderr)")
                continue
            }
            #expect(try Self.encoded(answer) == JSONWriter.string(Self.canonical(try Self.parse(line))), "customer \(customer)")
            // The library's own writer gives the command line's exact bytes, key order included.
            #expect(JSONWriter.string(answer.json()) == line)
        }
    }

    @Test("the README's embedding example compiles with `import Entitlements` alone and prints what `entitlements query` prints")
    func embeddingExamplePrintsTheQueryJSON() throws {
        guard let cli = Tool.executable else { throw Tool.Missing() }
        let example = cli.deletingLastPathComponent().appendingPathComponent("entitlements-example")
        #expect(FileManager.default.isExecutableFile(atPath: example.path), "not built: \(example.path)")
        let workspace = try Workspace(name: "library-example")
        let history = History.generate(lines: 30, seed: 0x18)
        let all = try workspace.write(lines: history.lines.map(\.text), to: "all.ndjson")
        try workspace.cli("ingest", db: "db.sqlite", [all.path])
        let one = try workspace.write(lines: [history.lines[0].text], to: "one.json")
        for customer in history.customers.prefix(3) {
            let process = Process()
            process.executableURL = example
            process.arguments = [workspace.configPath, workspace.path("db.sqlite"), one.path, customer]
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let printed = out.fileHandleForReading.readDataToEndOfFile()
            let errors = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(String(decoding: errors, as: UTF8.self))")
            let query = try workspace.cli("query", db: "db.sqlite", ["--app-transaction-id", customer])
            // Both answer for "now": the moments differ by the time between the two runs.
            func withoutAt(_ text: String) throws -> JSONValue {
                guard case .object(var object) = try Self.parse(text.trimmingCharacters(in: .newlines)) else { return .null }
                #expect(object["at"] != nil || object["error"] != nil)
                object["at"] = nil
                return Self.canonical(.object(object))
            }
            #expect(try withoutAt(String(decoding: printed, as: UTF8.self)) == (try withoutAt(query.stdout)), "customer \(customer)")
            // Its ingest results (standard error) are the command line's lines (the document is a duplicate now).
            let lines = String(decoding: errors, as: UTF8.self).split(separator: "\n")
            #expect(lines.count == history.lines[0].items.count)
            #expect(try lines.allSatisfy { text in
                guard case .string(let result)? = try Self.parse(text)["result"] else { return false }
                return result == "duplicate" || result == "rejected"
            })
        }
    }

    @Test("async work runs on the engine's own threads, not Swift's cooperative pool")
    func asyncRunsOnTheEnginesThreads() async throws {
        let workspace = try Workspace(name: "library-threads")
        let engine = try workspace.engine("db.sqlite")
        // Each engine thread records its name in its thread dictionary.
        @Sendable func label() -> String { Thread.current.threadDictionary["entitlements.thread"] as? String ?? "" }
        let name = try await engine.onEngineThread { () throws(EngineError) in label() }
        #expect(name.hasPrefix("entitlements.engine."))
        let long = try await engine.onOwnThread("entitlements.test") { () throws(EngineError) in label() }
        #expect(long == "entitlements.test")
        // Many at once: every one answers (more callers than pool threads queue, none is lost).
        let history = History.generate(lines: 20, seed: 0x19)
        _ = try await engine.ingest(history.lines.map { InputBytes($0.text) })
        let answers = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                let customer = history.customers[index % history.customers.count]
                group.addTask {
                    if case .customer = try await engine.query(.appTransactionId(customer)) { return true }
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(answers == 64)
    }

    /// Set once, read from other threads.
    final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        private(set) var outcome: Bool? = nil
        func first() -> Bool { lock.lock(); defer { lock.unlock() }; if done { return false }; done = true; return true }
        func record(_ value: Bool) { lock.lock(); outcome = value; lock.unlock() }
        var recorded: Bool? { lock.lock(); defer { lock.unlock() }; return outcome }
    }

    /// Inside the replay's (or audit's) progress callback, that is while it runs, an ingest
    /// on the same engine is issued and waited for: it completes (an event, bounded by a
    /// generous minute), where an engine whose replay held the write path would deadlock.
    static func ingestCompletes(during engine: Engine, document: String) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let stored = Once()
        Thread {
            let results = try? engine.ingest([InputBytes(document)])
            stored.record(results?.first?.outcome == .appended)
            done.signal()
        }.start()
        return done.wait(timeout: .now() + 60) == .success && stored.recorded == true
    }

    /// A line of events found in no other line, and the other lines.
    static func split(_ history: History) throws -> (late: String, others: [String]) {
        func identities(_ line: InputLine) -> [String] {
            line.items.compactMap { if case .event(let identity) = $0 { identity } else { nil } }
        }
        let index = try #require(history.lines.indices.last { index in
            let line = history.lines[index]
            let mine = Set(identities(line))
            return !line.items.isEmpty && mine.count == line.items.count
                && !history.lines.indices.contains { $0 != index && !mine.isDisjoint(with: identities(history.lines[$0])) }
        })
        return (history.lines[index].text, history.lines.indices.filter { $0 != index }.map { history.lines[$0].text })
    }

    @Test("an ingest issued while a replay runs completes before the replay ends, and the replay's swap includes it")
    func ingestIsNotBlockedDuringReplay() async throws {
        let workspace = try Workspace(name: "library-replay")
        let (late, others) = try Self.split(History.generate(lines: 120, seed: 0x20))
        let engine = try workspace.engine("db.sqlite")
        _ = try await engine.ingest(others.map { InputBytes($0) })
        let once = Once()
        let report = try await engine.replay(progress: { _ in
            if once.first() { once.record(Self.ingestCompletes(during: engine, document: late)) }
        })
        #expect(once.recorded == true, "an ingest issued during the replay did not complete within 60 s")
        #expect(report.caughtUp >= 1, "the replay's swap did not apply the event ingested meanwhile")
        // The result is what ingesting gives: a second replay changes nothing.
        let again = try await engine.replay()
        #expect(again.changed == 0)
    }

    @Test("an ingest issued while an audit runs completes before the audit ends")
    func ingestIsNotBlockedDuringAudit() async throws {
        let workspace = try Workspace(name: "library-audit")
        let (late, others) = try Self.split(History.generate(lines: 60, seed: 0x21))
        let engine = try workspace.engine("db.sqlite")
        _ = try await engine.ingest(others.map { InputBytes($0) })
        let before = try Probe(workspace.path("db.sqlite")).eventCount()
        let once = Once()
        let report = try await engine.audit(progress: { _ in
            if once.first() { once.record(Self.ingestCompletes(during: engine, document: late)) }
        })
        #expect(once.recorded == true, "an ingest issued during the audit did not complete within 60 s")
        #expect(report.firstMismatch == nil && report.events == before, "the audit read its own snapshot: \(report.events) events of \(before)")
    }
}
