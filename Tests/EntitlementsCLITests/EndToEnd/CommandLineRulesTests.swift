import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// The command-line rules of specification section 6: `--version`, the `input`
/// number on every ingest line and the `empty` line, moments in milliseconds or ISO 8601
/// (seconds refused), input files and configuration paths checked and named, every
/// accepted flag documented and every other one refused.
@Suite struct CommandLineRulesTests {
    @Test("--version prints `entitlements <version>` and exits 0")
    func version() throws {
        let run = try E2E.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout == "entitlements \(Engine.version)\n")
        #expect(try E2E.run(["--version", "extra"]).status == 2)
    }

    @Test("every ingest line carries its document's number (NDJSON line, blank lines counted); an empty document prints an empty line")
    func inputNumbersAndEmptyDocuments() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let documents = ReplayEqualsIngestTests.history(seed: 31)
        // Line 1: a document; 2: blank; 3: an empty history page; 4: garbage; 5: blank; 6: a document.
        let lines = [documents[0], "", #"{"signedTransactions": []}"#, "not json", "   ", documents[1]]
        let text = lines.joined(separator: "\n") + "\n"
        for viaFile in [false, true] {
            let database = folder.appendingPathComponent("numbers-\(viaFile).sqlite").path
            let run: E2E.Run
            if viaFile {
                let file = folder.appendingPathComponent("input.ndjson")
                try Data(text.utf8).write(to: file)
                run = try E2E.run(["ingest", "--db", database, "--config", config, file.path], in: folder)
            } else {
                run = try E2E.run(["ingest", "--db", database, "--config", config], stdin: text, in: folder)
            }
            #expect(run.status == 1, "\(run.stderr)")
            let inputs = run.lines.map { line -> Int64 in if case .int(let n)? = line["input"] { n } else { -1 } }
            let results = run.lines.map { line -> String in if case .string(let r)? = line["result"] { r } else { "?" } }
            #expect(!inputs.isEmpty && inputs.allSatisfy { $0 > 0 }, "every line carries input: \(run.stdout)")
            #expect(Set(inputs) == [1, 3, 4, 6], "\(run.stdout)")
            #expect(zip(inputs, results).contains { $0 == 3 && $1 == "empty" })
            #expect(zip(inputs, results).filter { $0.0 == 3 }.count == 1)
            #expect(zip(inputs, results).contains { $0 == 4 && $1 == "rejected" })
            // The empty line is exactly the specification's.
            #expect(run.stdout.contains(#"{"input":3,"result":"empty"}"#))
        }
        // A file holding one (indented) document is document 1.
        let whole = folder.appendingPathComponent("whole.json")
        try Data("{\n  \"signedTransactions\": []\n}\n".utf8).write(to: whole)
        let run = try E2E.run(["ingest", "--db", folder.appendingPathComponent("whole.sqlite").path, "--config", config, whole.path])
        #expect(run.status == 0)
        #expect(run.stdout == #"{"input":1,"result":"empty"}"# + "\n")
    }

    @Test("--at takes milliseconds or ISO 8601 UTC; an integer below 100000000000 (seconds?) is a usage error")
    func momentsInMillisecondsOrISO8601() throws {
        #expect(try TimeArgument.parse("2026-11-23T10:00:00Z") == 1_795_428_000_000)
        #expect(try TimeArgument.parse("2026-11-23T10:00:00.250Z") == 1_795_428_000_250)
        #expect(try TimeArgument.parse("2026-11-23T10:00:00+00:00") == 1_795_428_000_000)
        #expect(try TimeArgument.parse("1795428000000") == 1_795_428_000_000)
        #expect(try TimeArgument.parse("100000000000") == 100_000_000_000)
        for bad in ["99999999999", "1795428000", "0", "-5", "2026-11-23", "2026-11-23T10:00:00", "2026-02-30T10:00:00Z",
                    "2026-11-23T10:00:00+01:00", "soon", "", "1e12", "99999999999999999999"] {
            #expect(throws: TimeArgument.Invalid.self, "\(bad)") { try TimeArgument.parse(bad) }
        }
        #expect(TimeArgument.iso8601(1_795_428_000_250) == "2026-11-23T10:00:00.250Z")

        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let database = folder.appendingPathComponent("at.sqlite").path
        let documents = ReplayEqualsIngestTests.history(seed: 32)
        _ = try E2E.run(["ingest", "--db", database, "--config", config], stdin: documents.joined(separator: "\n") + "\n", in: folder)
        let customer = "704000000000001000"
        let millis = try E2E.run(["query", "--db", database, "--config", config, "--app-transaction-id", customer, "--at", "1795428000000"])
        let iso = try E2E.run(["query", "--db", database, "--config", config, "--app-transaction-id", customer, "--at", "2026-11-23T10:00:00Z"])
        #expect(millis.status == iso.status && millis.stdout == iso.stdout && !iso.stdout.isEmpty, "\(iso.stderr)")
        let seconds = try E2E.run(["query", "--db", database, "--config", config, "--app-transaction-id", customer, "--at", "1795428000"])
        #expect(seconds.status == 2)
        #expect(seconds.stderr.contains("--at") && seconds.stderr.contains("seconds"), "\(seconds.stderr)")
        #expect(seconds.stdout.isEmpty)
    }

    @Test("a folder, a missing or an unreadable input file is a usage error naming it (exit 2), checked before anything is ingested")
    func inputFilesAreChecked() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let database = folder.appendingPathComponent("files.sqlite").path
        let good = folder.appendingPathComponent("good.ndjson")
        try Data((ReplayEqualsIngestTests.history(seed: 33).prefix(3).joined(separator: "\n") + "\n").utf8).write(to: good)
        let subfolder = folder.appendingPathComponent("a-folder")
        try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: true)
        var cases: [(String, String)] = [(subfolder.path, "folder"), (folder.appendingPathComponent("missing.ndjson").path, "no input file")]
        if geteuid() != 0 {  // root reads anything
            let locked = folder.appendingPathComponent("locked.ndjson")
            try Data("x\n".utf8).write(to: locked)
            chmod(locked.path, 0)
            cases.append((locked.path, "permission denied"))
        }
        for command in ["ingest", "verify"] {
            for (path, words) in cases {
                var arguments = [command, "--config", config, good.path, path]
                if command == "ingest" { arguments.insert(contentsOf: ["--db", database], at: 1) }
                let run = try E2E.run(arguments, in: folder)
                #expect(run.status == 2, "\(command) \(path): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(path) && run.stderr.contains(words), "\(run.stderr)")
                #expect(run.stdout.isEmpty, "nothing is processed before the check: \(run.stdout)")
            }
        }
        let stored = FileManager.default.fileExists(atPath: database) ? try Probe(database).eventCount() : 0
        #expect(stored == 0)
    }

    @Test("an empty, missing or folder --config is a clear error naming it (exit 2), never NSCocoaErrorDomain")
    func configurationPathsAreNamed() throws {
        let folder = E2E.folder()
        let cases: [(String, String)] = [
            ("", "configuration path is empty"),
            (folder.appendingPathComponent("nope.json").path, "no configuration file at \(folder.appendingPathComponent("nope.json").path)"),
            (folder.path, "\(folder.path) is a folder"),
        ]
        let empty = folder.appendingPathComponent("empty.json")
        try Data().write(to: empty)
        for (path, words) in cases + [(empty.path, "\(empty.path) is empty")] {
            for command in ["ingest", "query", "replay", "verify", "audit"] {
                var arguments = [command, "--config", path]
                if command == "query" { arguments += ["--app-transaction-id", "1"] }
                let run = try E2E.run(arguments, in: folder)
                #expect(run.status == 2, "\(command) --config '\(path)': \(run.stderr)")
                #expect(run.stderr.contains(words), "\(command): \(run.stderr)")
                #expect(!run.stderr.contains("NSCocoaErrorDomain") && !run.stderr.contains("error 256"))
            }
        }
    }

    /// The flags each command accepts (as its parser is given them).
    static let accepted: [String: [String]] = [
        "ingest": ["--db", "--config", "--workers", "--batch"],
        "query": ["--db", "--config", "--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token", "--at", "--pretty"],
        "replay": ["--db", "--config", "--diff", "--reverify", "--progress", "--quiet"],
        "verify": ["--config"],
        "audit": ["--db", "--config", "--progress"],
    ]

    @Test("every flag a command accepts is in its --help, and any other flag is a usage error")
    func everyFlagIsDocumentedAndNoOtherAccepted() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        for (command, flags) in Self.accepted {
            let help = try E2E.run([command, "--help"]).stdout
            for flag in flags { #expect(help.contains(flag), "\(command) --help does not document \(flag)") }
            for bogus in ["--bogus", "--verbose", "--dry-run", "--db-path", "--at-ms"] where !flags.contains(bogus) {
                let run = try E2E.run([command, "--config", config, bogus], in: folder)
                #expect(run.status == 2 && run.stderr.contains("unknown option \(bogus)"), "\(command) \(bogus): \(run.stderr)")
            }
        }
        // verify uses no database: --db is refused, not ignored.
        let verify = try E2E.run(["verify", "--config", config, "--db", "x.sqlite"], in: folder)
        #expect(verify.status == 2)
    }
}
