import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestPKI
import TestSupport

extension Reliability {
    /// The hostile corpus (``HostileCorpus``): every input rejected with its precise code,
    /// quarantined exactly once, and nobody's state changed.
    @Suite("Bad input")
    struct BadInput {
        static let corpus = HostileCorpus.build(pki: Scenario.pki)

        /// A workspace configured as the corpus expects, with a baseline history ingested in Sandbox.
        func prepared(_ environment: String) throws -> (Workspace, History?) {
            let workspace = try Workspace(name: "corpus-\(environment)", maxInputBytes: HostileCorpus.maxInputBytes, environment: environment)
            guard environment == "Sandbox" else {
                try workspace.cli("ingest", db: "db.sqlite", [try workspace.write(lines: [], to: "none.ndjson").path])
                return (workspace, nil)
            }
            let history = History.generate(lines: 40, seed: 0xBAD1)
            let file = try workspace.write(lines: history.lines.map(\.text), to: "baseline.ndjson")
            let baseline = try workspace.cli("ingest", db: "db.sqlite", [file.path])
            #expect(baseline.status == 0 || baseline.status == 1, "\(baseline.stderr)")
            return (workspace, history)
        }

        @Test("the corpus is large and names every attack once")
        func corpusShape() {
            let names = Self.corpus.map(\.name)
            #expect(Set(names).count == names.count)
            #expect(Self.corpus.count >= 50, "only \(Self.corpus.count) cases")
            let codes = Set(Self.corpus.flatMap(\.expected))
            #expect(codes == ["MALFORMED_INPUT", "VERIFICATION_FAILURE", "INVALID_APP_IDENTIFIER", "INVALID_CERTIFICATE",
                              "INVALID_CHAIN_LENGTH", "INVALID_CHAIN", "INVALID_ENVIRONMENT"])
            print("hostile corpus: \(Self.corpus.count) cases")
        }

        @Test("each hostile input: its precise code, quarantined once with its raw bytes, state unchanged", arguments: ["Sandbox", "Production"])
        func eachInputRejectedAndQuarantinedOnce(environment: String) throws {
            let cases = Self.corpus.filter { $0.environment == environment }
            let (workspace, history) = try prepared(environment)
            let engine = try workspace.engine("db.sqlite")
            let probe = try Probe(workspace.path("db.sqlite"))
            let customers = history?.customers ?? []
            let answersBefore = try answers(engine, customers: customers)
            let eventsBefore = try probe.eventCount()

            var wrong: [String] = []
            for item in cases {
                let quarantined = try probe.quarantineCount()
                let results = try engine.ingest([InputBytes(bytes: item.input)])
                let codes = results.map { $0.outcome == .rejected ? ($0.errorCode ?? "?") : $0.outcome.rawValue }
                if codes != item.expected {
                    wrong.append("\(item.name): expected \(item.expected), got \(codes) \(results.map { $0.errorMessage ?? "" })")
                    continue
                }
                // One quarantine row per rejected item, holding its code and what was received.
                let added = try probe.quarantineCount() - quarantined
                let rowsExpected = item.newQuarantineRows ?? item.expected.count
                if added != Int64(rowsExpected) { wrong.append("\(item.name): \(added) quarantine rows for \(item.expected.count) items") }
                guard added > 0 else { continue }
                let rows = try probe.strings(
                    "SELECT code || ' ' || size || ' ' || length(raw) FROM quarantine ORDER BY id DESC LIMIT \(item.expected.count)").reversed()
                if item.expected.count == 1, let row = rows.first {
                    let parts = row.split(separator: " ").map(String.init)
                    let size = Int(parts[1]) ?? -1, stored = Int(parts[2]) ?? -1
                    if parts[0] != item.expected[0] { wrong.append("\(item.name): quarantined as \(parts[0])") }
                    // The document as received (cut to the limit when over it), or the item's JWS.
                    if stored > HostileCorpus.maxInputBytes || size < stored || (size > item.input.count) {
                        wrong.append("\(item.name): quarantined \(stored) of \(size) bytes for a \(item.input.count)-byte input")
                    }
                }
            }
            #expect(wrong.isEmpty, "\(wrong.count) of \(cases.count) cases wrong:\n\(wrong.joined(separator: "\n"))")

            // Nothing entered the log; nobody's answer changed; projections equal a replay.
            #expect(try probe.eventCount() == eventsBefore)
            let answersAfter = try answers(engine, customers: customers)
            let unchanged = answersAfter == answersBefore
            #expect(unchanged, "a hostile input changed a customer's answer:\n\(differences(answersBefore, answersAfter))")
            #expect(try probe.customers().count == customers.count)
            #expect(try engine.replay().changed == 0)

            // The same inputs again: rejected the same way, quarantined no second time.
            let quarantined = try probe.quarantineCount()
            let again = try engine.ingest(cases.map { InputBytes(bytes: $0.input) })
            #expect(again.map { $0.errorCode ?? $0.outcome.rawValue } == cases.flatMap(\.expected))
            #expect(try probe.quarantineCount() == quarantined, "a hostile input was quarantined twice")
            #expect(try probe.eventCount() == eventsBefore)
        }

        /// Writes the corpus as files, `NNN-name.input`, and returns their paths (blank inputs included).
        static func writeCorpus(_ cases: [CorpusCase], to folder: URL, includeHuge: Bool = true) throws -> [(CorpusCase, URL)] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var files: [(CorpusCase, URL)] = []
            for (index, item) in cases.enumerated() where includeHuge || !item.isHuge {
                let url = folder.appendingPathComponent(String(format: "%03d-%@.input", index + 1, item.name))
                try Data(item.input).write(to: url)
                files.append((item, url))
            }
            return files
        }

        @Test("the corpus through the command line: ingest and verify print each code; blank lines are no input", arguments: ["Sandbox", "Production"])
        func corpusThroughTheCommandLine(environment: String) throws {
            let (workspace, _) = try prepared(environment)
            let files = try Self.writeCorpus(Self.corpus.filter { $0.environment == environment }, to: workspace.url("corpus"))
            let before = try Probe(workspace.path("db.sqlite")).eventCount()
            let expected = files.filter { !$0.0.isBlank }.flatMap(\.0.expected)
            for command in ["ingest", "verify"] {
                // verify uses no database (--db is refused there).
                let outcome = command == "verify"
                    ? try Tool.run(["verify", "--config", workspace.configPath] + files.map(\.1.path), in: workspace.folder)
                    : try workspace.cli(command, db: "db.sqlite", files.map(\.1.path))
                #expect(outcome.status == 1, "\(command) exit \(outcome.status): \(outcome.stderr)")
                let codes = outputObjects(outcome.stdout).map { text($0["error"]?["code"]) ?? text($0["result"]) ?? "?" }
                #expect(codes == expected, "\(command): \(zip(codes, expected).enumerated().filter { $0.element.0 != $0.element.1 }.prefix(5).map { "\($0.offset): \($0.element)" })")
            }
            #expect(try Probe(workspace.path("db.sqlite")).eventCount() == before)
        }

        @Test("the committed corpus (Tests/reliability/corpus) is rejected as its manifest says",
              .enabled(if: FileManager.default.fileExists(atPath: committedCorpus.appendingPathComponent("manifest.tsv").path)))
        func committedCorpusMatchesManifest() throws {
            let manifest = String(decoding: Tool.read(Self.committedCorpus.appendingPathComponent("manifest.tsv").path), as: UTF8.self)
            let rows = manifest.split(separator: "\n").dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            #expect(rows.count >= 50)
            let workspace = try Workspace(name: "committed-corpus")
            for environment in ["Sandbox", "Production"] {
                let mine = rows.filter { $0[3] == environment && $0[4] != "huge" }
                let config = Self.committedCorpus.appendingPathComponent("config-\(environment.lowercased()).json").path
                let files = mine.map { Self.committedCorpus.appendingPathComponent($0[0]).path }
                let outcome = try Tool.run(["ingest", "--db", workspace.path("\(environment).sqlite"), "--config", config] + files, in: workspace.folder)
                #expect(outcome.status == 1, "\(outcome.stderr)")
                let codes = outputObjects(outcome.stdout).map { text($0["error"]?["code"]) ?? text($0["result"]) ?? "?" }
                let expected = mine.filter { $0[4] != "blank" }.flatMap { $0[2].split(separator: ",").map(String.init) }
                #expect(codes == expected, "\(environment): \(zip(codes, expected).enumerated().filter { $0.element.0 != $0.element.1 }.prefix(5).map { "\(mine[$0.offset][0]): \($0.element)" })")
                #expect(try Probe(workspace.path("\(environment).sqlite")).eventCount() == 0)
            }
        }

        static let committedCorpus = Scenario.packageRoot.appendingPathComponent("Tests/reliability/corpus")

        /// Writes the hostile corpus to `folder` as Tests/reliability/corpus holds it: one file per
        /// case (inputs over 1 MB only listed), `manifest.tsv`, and the configurations it is checked
        /// under; signed with `pki` (the fixtures' test PKI, Fixtures/pki, so its root can be
        /// configured from the repository). Earlier corpus files in `folder` are removed first.
        /// Returns the names of the files written.
        @discardableResult
        static func writeCommittedCorpus(to folder: URL, pki: TestPKI) throws -> [String] {
            let cases = HostileCorpus.build(pki: pki)
            if FileManager.default.fileExists(atPath: folder.path) {
                for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where isCorpusFile(name) {
                    try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
                }
            }
            let files = try Self.writeCorpus(cases, to: folder, includeHuge: false)
            var manifest = "file\tname\texpected\tenvironment\tkind\tnote\n"
            for (item, url) in files {
                manifest += "\(url.lastPathComponent)\t\(item.name)\t\(item.expected.joined(separator: ","))\t\(item.environment)\t\(item.isBlank ? "blank" : "input")\t\(item.note)\n"
            }
            for item in cases where item.isHuge {
                manifest += "(generated)\t\(item.name)\t\(item.expected.joined(separator: ","))\t\(item.environment)\thuge\t\(item.note) (\(item.input.count) bytes: built by HostileCorpus at test time, not stored)\n"
            }
            try Data(manifest.utf8).write(to: folder.appendingPathComponent("manifest.tsv"))
            for environment in ["Sandbox", "Production"] {
                try Data(HostileCorpus.configText(environment: environment, root: "../../../Fixtures/pki/root.pem").utf8)
                    .write(to: folder.appendingPathComponent("config-\(environment.lowercased()).json"))
            }
            return try corpusFiles(in: folder)
        }

        /// Whether `name` is one of the files ``writeCommittedCorpus(to:pki:)`` writes.
        static func isCorpusFile(_ name: String) -> Bool {
            name.hasSuffix(".input") || name.hasPrefix("config-") || name == "manifest.tsv"
        }

        /// The corpus files in `folder`, sorted.
        static func corpusFiles(in folder: URL) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter(isCorpusFile).sorted()
        }

        /// The committed corpus is what ``HostileCorpus`` makes today: the same files, the same
        /// manifest (names, expected codes, environments, notes) and the same configurations; the
        /// signatures differ from run to run, and the committed files' verdicts are checked by
        /// ``committedCorpusMatchesManifest()``. `RELIABILITY_WRITE_CORPUS=1` (see
        /// Tests/reliability/make-corpus.sh) rewrites the committed corpus first.
        @Test("the committed corpus (Tests/reliability/corpus) is the one HostileCorpus makes today",
              .enabled(if: FileManager.default.fileExists(atPath: committedCorpus.appendingPathComponent("manifest.tsv").path)))
        func committedCorpusIsCurrent() throws {
            let pki = try TestPKI.load(from: Scenario.packageRoot.appendingPathComponent("Fixtures/pki"))
            if ProcessInfo.processInfo.environment["RELIABILITY_WRITE_CORPUS"] != nil {
                let written = try Self.writeCommittedCorpus(to: Self.committedCorpus, pki: pki)
                print("wrote \(written.count) corpus files to \(Self.committedCorpus.path)")
            }
            let workspace = try Workspace(name: "corpus-today")
            let today = workspace.url("corpus")
            let written = try Self.writeCommittedCorpus(to: today, pki: pki)
            #expect(written.count >= 50)
            #expect(try Self.corpusFiles(in: Self.committedCorpus) == written, "the corpus files differ: run Tests/reliability/make-corpus.sh")
            for name in ["manifest.tsv", "config-sandbox.json", "config-production.json"] {
                let committed = Tool.read(Self.committedCorpus.appendingPathComponent(name).path)
                let made = Tool.read(today.appendingPathComponent(name).path)
                #expect(!made.isEmpty && committed == made, "\(name) differs from what HostileCorpus makes: run Tests/reliability/make-corpus.sh")
            }
        }

        @Test("a 64 MB line is never held in memory: the reader keeps at most maxInputBytes + 1 bytes of it")
        func oversizedLineIsBoundedBeforeReading() throws {
            let workspace = try Workspace(name: "bounded", maxInputBytes: HostileCorpus.maxInputBytes)
            let history = History.generate(lines: 3, seed: 3)
            let path = workspace.path("huge.ndjson")
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw Faults.Failure(description: "cannot create \(path)") }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.write(contentsOf: Data((history.lines[0].text + "\n").utf8))
            try handle.write(contentsOf: Data("{\"signedPayload\":\"".utf8))
            let block = Data(repeating: UInt8(ascii: "A"), count: 1 << 20)
            for _ in 0..<64 { try handle.write(contentsOf: block) }
            try handle.write(contentsOf: Data("\"}\n".utf8))
            try handle.write(contentsOf: Data((history.lines[1].text + "\n").utf8))
            try handle.close()
            let size = 64 << 20 + 20

            // The library's reader: the line is cut to limit + 1 bytes, its size still known.
            guard var reader = InputReader(path: path, limit: HostileCorpus.maxInputBytes) else { throw Faults.Failure(description: "cannot open") }
            var lines: [InputBytes] = []
            while let batch = reader.nextBatch(maxLines: 8) { lines += batch }
            reader.close()
            #expect(lines.count == 3)
            #expect(lines.allSatisfy { $0.bytes.count <= HostileCorpus.maxInputBytes + 1 })
            // Read no further than the limit plus the reader's look-ahead (and one chunk): its size is "at least".
            let cutAt = HostileCorpus.maxInputBytes + InputReader.lookAhead
            #expect(lines[1].sizeIsLowerBound && lines[1].size > cutAt && lines[1].size <= cutAt + 65_536 + 20, "\(lines[1].size)")
            #expect(!lines[0].sizeIsLowerBound && !lines[2].sizeIsLowerBound)
            #expect(lines[0].bytes == Array(history.lines[0].text.utf8) && lines[2].bytes == Array(history.lines[1].text.utf8))

            // The command line, fed the file on standard input: the big line is rejected, its neighbours are not,
            // and the process never holds anything near 64 MB.
            let small = try workspace.write(lines: [history.lines[2].text], to: "small.ndjson")
            // Each process is given its input on a pipe left open: once it has printed every
            // result it waits for more, and its high-water mark then covers all the work (an
            // event, not a sample taken in passing).
            func measure(_ database: String, _ input: URL, results: Int) throws -> (Tool.Outcome, Int) {
                let running = try Tool.startOnOpenInput(
                    ["ingest", "--db", database, "--config", workspace.configPath], in: workspace.folder, input: input)
                let printed = running.waitForOutput(lines: results, timeout: 300)
                let peak = running.peakKiB()
                running.closeInput()
                let outcome = running.wait()
                #expect(printed, "ingest did not print its \(results) results: \(outcome.stdout) \(outcome.stderr)")
                return (outcome, peak)
            }
            let (_, baselinePeak) = try measure("baseline.sqlite", small, results: history.lines[2].items.count)
            let (outcome, peak) = try measure(
                "db.sqlite", URL(fileURLWithPath: path), results: history.lines[0].items.count + 1 + history.lines[1].items.count)
            let results = outputObjects(outcome.stdout)
            #expect(results.count == history.lines[0].items.count + 1 + history.lines[1].items.count)
            let rejected = results.filter { text($0["result"]) == "rejected" }
            #expect(rejected.count == 1 && text(rejected.first?["error"]?["code"]) == "MALFORMED_INPUT")
            #expect(text(rejected.first?["error"]?["message"])?.contains("bytes (not read to its end) exceeds the limit of \(HostileCorpus.maxInputBytes)") == true)
            #expect(size > cutAt)
            // Compared with the same program ingesting one small line (sanitizers and debug builds add
            // their own overhead), both peaks read once all the work is done. Holding the line would
            // add at least 64 MiB.
            #expect(peak > 0 && peak - baselinePeak < 32 * 1024,
                    "ingest peaked at \(peak) KiB reading a 64 MiB line, \(baselinePeak) KiB reading a small one")
            let stored = try Probe(workspace.path("db.sqlite")).strings("SELECT (size > \(cutAt)) || ' ' || length(raw) FROM quarantine")
            #expect(stored == ["1 \(HostileCorpus.maxInputBytes)"])
            print("64 MiB line: ingest peak RSS \(peak) KiB (one small line: \(baselinePeak) KiB)")
        }
    }
}
