import EntitlementCore
import Entitlements

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Exit codes of the command line.
enum ExitCode: Int32 {
    case success = 0
    case rejected = 1
    case usage = 2
    case storage = 3
}

/// The commands: each parses its flags, calls the library, prints JSON.
enum Commands {
    static let defaultDatabase = "entitlements.sqlite"

    /// Loads the configuration and opens the database as `mode` allows: commands
    /// that only read open it ``DatabaseMode/readOnly`` (a missing file is
    /// `DATABASE_NOT_FOUND`, nothing is created or migrated), `replay`
    /// ``DatabaseMode/existing``, commands that record ``DatabaseMode/create``.
    static func loadEngine(_ arguments: Arguments, command: String, mode: DatabaseMode = .create) throws(UsageError) -> (Engine?, ExitCode) {
        guard let configPath = arguments.values["--config"] else {
            throw UsageError(message: "--config PATH is required", command: command)
        }
        let configuration: EngineConfiguration
        do {
            configuration = try EngineConfiguration.load(path: configPath)
        } catch {
            Output.error("entitlements \(command): \(error.description)")
            return (nil, .usage)
        }
        let database = arguments.values["--db"] ?? defaultDatabase
        do {
            let engine = try Engine(configuration: configuration, databasePath: database, mode: mode)
            return (engine, .success)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            if error.code == .databaseMismatch { return (nil, .usage) }
            return (nil, error.code.isDatabase ? .storage : .usage)
        }
    }

    static func storageFailure(_ command: String, _ error: EngineError) -> ExitCode {
        Output.error("entitlements \(command): \(error.code): \(error.message)")
        return .storage
    }

    // MARK: ingest

    static func ingest(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "ingest", valued: ["--db", "--config", "--workers", "--batch"], switches: [])
        let workers = Int(try arguments.integer("--workers") ?? 2)
        let batch = Int(try arguments.integer("--batch") ?? 512)
        guard workers >= 1, workers <= 64 else { throw UsageError(message: "--workers expects 1 to 64", command: "ingest") }
        guard batch >= 1, batch <= 100_000 else { throw UsageError(message: "--batch expects 1 to 100000", command: "ingest") }
        let files = arguments.positional.isEmpty ? ["-"] : arguments.positional
        // Every file is checked before anything is read, created or committed.
        try checkInputs(files, command: "ingest")
        let (loaded, code) = try loadEngine(arguments, command: "ingest", mode: .create)
        guard let engine = loaded else { return code }
        if let warning = engine.rulesWarning() { Output.error(warning) }
        let limit = engine.configuration.maxInputBytes
        var anyRejected = false

        // Printed only after the batch's commit: each line is an acknowledgment.
        func acknowledge(_ results: [IngestResult]) {
            if results.contains(where: { $0.outcome == .rejected }) { anyRejected = true }
            Output.lines(results.map { $0.json() })
            for warning in engine.takeProductWarnings() { Output.error(warning) }
        }

        for file in files {
            let input = try openInput(file, limit: limit, command: "ingest")
            do throws(EngineError) {
                switch input {
                case .whole(let document):
                    acknowledge(try engine.ingest([document], workers: workers))
                case .lines(let opened):
                    // A file or a live stream alike: the next batch is read and verified on the
                    // engine's threads while the one before is appended; each batch's lines are
                    // printed once it is committed, without waiting for more input. A stream's
                    // batch is what has arrived (at least one line).
                    let reader = ReaderBox(opened)
                    defer { reader.reader.close() }
                    try engine.ingest(batches: { reader.reader.nextBatch(maxLines: batch) }, workers: workers, deliver: acknowledge)
                    if reader.reader.gaveUp {
                        anyRejected = true
                        Output.error(gaveUpNotice(file, limit: limit, command: "ingest"))
                    }
                }
            } catch {
                return storageFailure("ingest", error)
            }
        }
        // The file alone then holds every acknowledged event (background verification
        // may still hold the engine when this returns, so closing is not left to deinit).
        try? engine.checkpoint()
        return anyRejected ? .rejected : .success
    }

    /// Why the input `file` was read no further: a line in it never ended (``InputReader/gaveUp``).
    static func gaveUpNotice(_ file: String, limit: Int, command: String) -> String {
        let name = file == "-" ? "standard input" : file
        let bound = limit + InputReader.lookAhead + InputReader.longestSkip
        return "entitlements \(command): \(name): a line ran on for more than \(bound) bytes without ending (the limit is \(limit), maxInputBytes); the line is rejected; stopped reading \(name)"
    }

    /// An input reader, read from the engine's verifying thread while it lives.
    final class ReaderBox: @unchecked Sendable {
        var reader: InputReader
        init(_ reader: InputReader) { self.reader = reader }
    }

    /// An input file (or `-`, standard input) opened for reading.
    enum Input {
        /// A file holding one (possibly indented) JSON document, read whole.
        case whole(InputBytes)
        /// NDJSON: one document per line.
        case lines(InputReader)
    }

    /// Every input file exists, is a file (not a folder) and can be read; else a usage
    /// error naming it. `-` is standard input.
    static func checkInputs(_ files: [String], command: String) throws(UsageError) {
        for file in files where file != "-" {
            var info = stat()
            guard stat(file, &info) == 0 else {
                let reason = errno
                if reason == ENOENT || reason == ENOTDIR {
                    throw UsageError(message: "no input file \(file)", command: command)
                }
                throw UsageError(message: "cannot read input file \(file): \(String(cString: strerror(reason)))", command: command)
            }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                throw UsageError(message: "input \(file) is a folder, not a file (give the files in it)", command: command)
            }
            // Without waiting for a writer, should it be a named pipe.
            let fd = open(file, O_RDONLY | O_NONBLOCK)
            guard fd >= 0 else {
                let reason = errno
                let why = reason == EACCES || reason == EPERM ? "permission denied" : String(cString: strerror(reason))
                throw UsageError(message: "cannot read input file \(file): \(why)", command: command)
            }
            close(fd)
        }
    }

    static func openInput(_ file: String, limit: Int, command: String) throws(UsageError) -> Input {
        if file == "-" { return .lines(InputReader(standardInputWithLimit: limit)) }
        if let whole = wholeDocument(path: file, limit: limit) { return .whole(whole) }
        guard let reader = InputReader(path: file, limit: limit) else {
            Output.error("entitlements \(command): cannot open \(file)")
            throw UsageError(message: "cannot read input file \(file)", command: command)
        }
        return .lines(reader)
    }

    /// The file's content when it is a single JSON document spanning lines;
    /// `nil` when it should be read as NDJSON (one document per line).
    static func wholeDocument(path: String, limit: Int) -> InputBytes? {
        // Larger than one input may be: it can only be NDJSON.
        // Only a regular file is read whole: a device or a pipe may never end.
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= limit else { return nil }
        guard var reader = InputReader(path: path, limit: limit) else { return nil }
        defer { reader.close() }
        let all = reader.readAll()
        guard all.size <= limit else { return nil }
        let lines = all.bytes.split(omittingEmptySubsequences: true) { $0 == 0x0A || $0 == 0x0D }
            .filter { !$0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        if lines.count <= 1 { return nil }
        // A byte order mark before the document is skipped (as InputDocument does).
        let body = all.bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? all.bytes.dropFirst(3) : all.bytes[...]
        guard (try? JSONParser().parse(body)) != nil else { return nil }
        return all
    }

    // MARK: query

    static func query(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "query",
            valued: ["--db", "--config", "--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token", "--at"],
            switches: ["--pretty"])
        let selectors = ["--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token"]
            .filter { arguments.values[$0] != nil }
        guard selectors.count == 1 else {
            throw UsageError(
                message: "give exactly one of --app-transaction-id, --original-transaction-id, --transaction-id, --app-account-token",
                command: "query")
        }
        let at = try arguments.time("--at", command: "query")
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "query")
        }
        let (loaded, code) = try loadEngine(arguments, command: "query", mode: .readOnly)
        guard let engine = loaded else { return code }
        if let warning = engine.rulesWarning() { Output.error(warning) }
        let query: CustomerQuery
        switch selectors[0] {
        case "--app-transaction-id": query = .appTransactionId(arguments.values["--app-transaction-id"]!)
        case "--original-transaction-id": query = .originalTransactionId(arguments.values["--original-transaction-id"]!)
        case "--transaction-id": query = .transactionId(arguments.values["--transaction-id"]!)
        default: query = .appAccountToken(arguments.values["--app-account-token"]!)
        }
        do {
            let answer = try engine.query(query, at: at)
            for warning in engine.takeProductWarnings() { Output.error(warning) }
            if arguments.flags.contains("--pretty") { print(Output.pretty(answer.json())) } else { Output.line(answer.json()) }
            if case .notFound = answer { return .rejected }
            return .success
        } catch {
            return storageFailure("query", error)
        }
    }

    // MARK: replay

    static func replay(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "replay", valued: ["--db", "--config"], switches: ["--diff", "--reverify", "--progress", "--quiet"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "replay")
        }
        let (loaded, code) = try loadEngine(arguments, command: "replay", mode: .existing)
        guard let engine = loaded else { return code }
        let showProgress = !arguments.flags.contains("--quiet") && (arguments.flags.contains("--progress") || Output.stderrIsTerminal)
        let meter = ProgressMeter(enabled: showProgress)
        do {
            if arguments.flags.contains("--reverify") {
                let audit = try engine.audit(progress: { meter.report(label: "re-verified", done: $0, total: nil) })
                meter.finish()
                if let mismatch = audit.firstMismatch {
                    Output.line([
                        "error": [
                            "code": "VERIFICATION_FAILURE",
                            "message": .string("event \(mismatch.seq) (\(mismatch.identity)): \(mismatch.problem)"),
                        ]
                    ])
                    return .rejected
                }
            }
            let report = try engine.replay(
                diff: arguments.flags.contains("--diff"),
                progress: { meter.report(label: "replayed", done: $0.eventsDone, total: $0.eventsTotal) })
            meter.finish()
            try? engine.checkpoint()
            var object = JSONObject()
            object["events"] = .int(report.events)
            object["appTransactionIds"] = .int(report.customers)
            object["changed"] = .int(report.changed)
            object["rulesVersion"] = .string(report.rulesVersion)
            if arguments.flags.contains("--diff") {
                object["diff"] = .array(
                    report.diffs.map { diff in
                        var line = JSONObject()
                        line["appTransactionId"] = .string(diff.customerKey)
                        line["before"] = .array(diff.before.map { .string($0) })
                        line["after"] = .array(diff.after.map { .string($0) })
                        // A customer with no event left in the log (events deleted by hand).
                        if diff.removed { line["removed"] = true }
                        return .object(line)
                    })
            }
            Output.line(.object(object))
            for warning in engine.takeProductWarnings() { Output.error(warning) }
            return .success
        } catch {
            meter.finish()
            return storageFailure("replay", error)
        }
    }

    // MARK: verify

    static func verify(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "verify", valued: ["--config"], switches: [])
        guard let configPath = arguments.values["--config"] else {
            throw UsageError(message: "--config PATH is required", command: "verify")
        }
        let configuration: EngineConfiguration
        do { configuration = try EngineConfiguration.load(path: configPath) } catch {
            Output.error("entitlements verify: \(error.description)")
            return .usage
        }
        let verifier: DocumentVerifier
        do { verifier = try DocumentVerifier(configuration: configuration) } catch {
            Output.error("entitlements verify: \(error.code): \(error.message)")
            return .usage
        }
        var anyRejected = false
        let files = arguments.positional.isEmpty ? ["-"] : arguments.positional
        try checkInputs(files, command: "verify")
        func report(_ documents: [InputBytes]) {
            let lines = documents.flatMap(verifier.verify)
            if lines.contains(where: { $0["result"] == "rejected" }) { anyRejected = true }
            Output.lines(lines)
        }
        for file in files {
            switch try openInput(file, limit: configuration.maxInputBytes, command: "verify") {
            case .whole(let document):
                report([document])
            case .lines(var reader):
                defer { reader.close() }
                while let lines = reader.nextBatch(maxLines: 64) { report(lines) }
                if reader.gaveUp {
                    anyRejected = true
                    Output.error(gaveUpNotice(file, limit: configuration.maxInputBytes, command: "verify"))
                }
            }
        }
        return anyRejected ? .rejected : .success
    }

    // MARK: audit

    static func audit(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "audit", valued: ["--db", "--config", "--expect-head"], switches: ["--progress"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "audit")
        }
        var expectedHead: LogHead? = nil
        if let text = arguments.values["--expect-head"] {
            guard let head = LogHead(text) else {
                throw UsageError(message: "--expect-head expects SEQ:HASH as audit prints them (headSeq, headHash), got \"\(text)\"", command: "audit")
            }
            expectedHead = head
        }
        let (loaded, code) = try loadEngine(arguments, command: "audit", mode: .readOnly)
        guard let engine = loaded else { return code }
        let meter = ProgressMeter(enabled: arguments.flags.contains("--progress") || Output.stderrIsTerminal)
        do {
            let report = try engine.audit(expectedHead: expectedHead, progress: { meter.report(label: "audited", done: $0, total: nil) })
            meter.finish()
            var object = JSONObject()
            object["events"] = .int(report.events)
            object["triggersPresent"] = .bool(report.triggersPresent)
            // Record these outside the database: deleting the newest events leaves a valid shorter chain.
            object["headSeq"] = .int(report.headSeq)
            object["headHash"] = .string(report.headHash)
            if !report.triggerProblems.isEmpty { object["triggerProblems"] = .array(report.triggerProblems.map { .string($0) }) }
            if let recorded = report.recordedHead {
                object["recordedHead"] = ["seq": .int(recorded.seq), "hash": .string(recorded.hash)]
            }
            if let mismatch = report.firstMismatch {
                object["ok"] = false
                object["firstMismatch"] = [
                    "seq": .int(mismatch.seq), "identity": .string(mismatch.identity), "problem": .string(mismatch.problem),
                ]
            } else {
                object["ok"] = .bool(report.triggersPresent)
            }
            Output.line(.object(object))
            return report.firstMismatch == nil && report.triggersPresent ? .success : .rejected
        } catch {
            return storageFailure("audit", error)
        }
    }
}

/// Progress on standard error: done, rate, ETA.
final class ProgressMeter {
    let enabled: Bool
    let start = Engine.now()
    var last: Int64 = 0
    var printed = false

    init(enabled: Bool) { self.enabled = enabled }

    func report(label: String, done: Int64, total: Int64?) {
        guard enabled else { return }
        let now = Engine.now()
        guard now - last >= 500 || (total != nil && done == total) else { return }
        last = now
        let seconds = max(Double(now - start) / 1000, 0.001)
        let rate = Double(done) / seconds
        var text = "\r\(label) \(done)"
        if let total, total > 0 {
            text += "/\(total) events (\(Int(Double(done) * 100 / Double(total)))%)"
            let eta = rate > 0 ? Double(total - done) / rate : 0
            text += ", \(Int(rate)) events/s, ETA \(Int(eta.rounded(.up)))s   "
        } else {
            text += " events, \(Int(rate)) events/s   "
        }
        Output.errorFragment(text)
        printed = true
    }

    func finish() {
        if printed { Output.errorFragment("\n") }
        printed = false
    }
}
