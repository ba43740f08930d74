import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
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
        // Finish Transaction calls (finishTransactions) run beside the ingest; what is due is finished before exit.
        let finisher = FinishTransactionCommand.startFinisher(engine, command: "ingest")
        defer { finisher?.stop() }
        let limit = engine.configuration.maxInputBytes
        var anyRejected = false
        var acknowledged = 0
        let interruption = reportInterruption()
        defer {
            interruption.cancel()
            signal(SIGINT, SIG_DFL)
        }

        // Printed only after the batch's commit: each line is an acknowledgment.
        func acknowledge(_ results: [IngestResult]) {
            acknowledged += results.count
            if results.contains(where: { $0.outcome == .rejected }) { anyRejected = true }
            Output.lines(results.map { $0.json() })
            for warning in engine.takeProductWarnings() { Output.error(warning) }
        }

        for file in files {
            let input = try openInput(file, limit: limit, command: "ingest")
            let acknowledgedBefore = acknowledged
            do throws(EngineError) {
                switch input {
                case .whole(let document):
                    // Through the batches' path, so that an unreplicated document is answered line by line too.
                    var pending: [InputBytes]? = [document]
                    try engine.ingest(batches: { defer { pending = nil }; return pending }, workers: 1, deliver: acknowledge)
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
                    } else if acknowledged == acknowledgedBefore {
                        // Nothing to print for it: say so, rather than leave the caller guessing.
                        Output.error("entitlements ingest: \(file == "-" ? "standard input" : file) holds no input")
                    }
                }
            } catch {
                return storageFailure("ingest", error)
            }
        }
        // V1 notifications are not evidence: what they name is fetched signed, when the API is configured.
        MigrateReceiptsCommand.syncV1Hints(engine, command: "ingest")
        // The file alone then holds every acknowledged event (background verification
        // may still hold the engine when this returns, so closing is not left to deinit).
        try? engine.checkpoint()
        return anyRejected ? .rejected : .success
    }

    /// Ctrl-C (SIGINT) ends `ingest` with exit 130 as before, but says what it leaves: every line
    /// acknowledged on standard output was committed before it was printed.
    static func reportInterruption() -> DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler {
            Output.error("entitlements ingest: interrupted; every line acknowledged on standard output before is committed")
            _exit(130)
        }
        source.resume()
        return source
    }

    /// An input reader, read from the engine's verifying thread while it lives.
    final class ReaderBox: @unchecked Sendable {
        var reader: InputReader
        init(_ reader: InputReader) { self.reader = reader }
    }
}
