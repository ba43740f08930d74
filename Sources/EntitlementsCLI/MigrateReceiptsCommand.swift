import EntitlementCore
import Entitlements
import Foundation

/// `entitlements migrate-receipts` (specification section 16), and the sync of the
/// original transaction ids V1 notifications name.
enum MigrateReceiptsCommand {
    static let help = """
        entitlements migrate-receipts [--db PATH] --config PATH FILE

        Brings the customers of the verifyReceipt years: ingests each legacy app receipt of
        FILE (one per line: {"receipt-data": "<base64>"}, as apps sent it to verifyReceipt, or
        the bare base64; `-` reads standard input), verified with OpenSSL against the Apple Inc. Root (or
        receiptRootCertificates), then, when appStoreServerAPI is configured, runs
        `sync --customer` for each original transaction id the receipts hold, so that the
        signed V2 history arrives (signed V2 data always wins over a receipt's).

        Prints one line per receipt part as `ingest` does ({"input": N, "result": ...,
        "kind": "receipt", "eventId": "<SHA-256 of the receipt>", ...}), then one line per
        original transaction id synced ({"originalTransactionId": ..., "appended": A,
        "duplicate": D, "rejected": R}, with "error" when the sync failed), then a summary:
        {"receipts": N, "appended": A, "duplicate": D, "rejected": R,
        "originalTransactionIds": K, "synced": S, "syncFailed": F}. Progress goes to
        standard error.

        OPTIONS
          --db PATH       database (default entitlements.sqlite; created if missing)
          --config PATH   configuration file (required); appStoreServerAPI to sync
          --no-sync       ingest the receipts only, even with appStoreServerAPI configured

        EXIT CODES
          0 done; 1 a receipt was rejected or a sync failed (everything else is kept);
          2 usage or configuration error; 3 the database could not be used
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let command = "migrate-receipts"
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config"], switches: ["--no-sync"])
        guard arguments.positional.count == 1, let file = arguments.positional.first else {
            throw UsageError(message: "give exactly one FILE of receipts", command: command)
        }
        try Commands.checkInputs([file], command: command)
        // `-` is standard input, as for `ingest`.
        guard let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file) else {
            throw UsageError(message: "cannot read input file \(file)", command: command)
        }
        let (loaded, code) = try Commands.loadEngine(arguments, command: command, mode: .create)
        guard let engine = loaded else { return code }

        var documents: [InputBytes] = []
        var number = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let bytes = Array(line)
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            documents.append(InputBytes(bytes: bytes, number: number))
        }
        var totals = SyncTotals()
        var originals: [String] = []
        var seen = Set<String>()
        var anyFailed = false
        var done = 0
        let chunk = 64
        while done < documents.count {
            let batch = Array(documents[done..<min(done + chunk, documents.count)])
            let results: [IngestResult]
            do { results = try engine.ingest(batch, workers: 2) } catch { return Commands.storageFailure(command, error) }
            for result in results {
                switch result.outcome {
                case .appended: totals.appended += 1
                case .duplicate: totals.duplicate += 1
                case .rejected: totals.rejected += 1
                default: break
                }
                // The receipt's own original transaction id: its customer may already answer
                // as the appTransactionId signed data linked it to.
                if result.kind == .receipt, result.outcome == .appended || result.outcome == .duplicate,
                    let id = result.originalTransactionId ?? result.appTransactionId.flatMap({ $0.hasPrefix("otid:") ? String($0.dropFirst(5)) : nil })
                {
                    if seen.insert(id).inserted { originals.append(id) }
                }
            }
            Output.lines(results.map { $0.json() })
            for warning in engine.takeProductWarnings() { Output.error(warning) }
            done += batch.count
            Output.error("entitlements \(command): \(done)/\(documents.count) receipts ingested")
        }
        if totals.rejected > 0 { anyFailed = true }

        var synced = 0
        var syncFailed = 0
        if engine.configuration.appStoreServerAPI != nil && !arguments.flags.contains("--no-sync") && !originals.isEmpty {
            let sync: AppStoreSync
            do { sync = try AppStoreSync(engine: engine) } catch {
                Output.error("entitlements \(command): \(error.code): \(error.message)")
                return .usage
            }
            for (index, id) in originals.enumerated() {
                let outcome = sync.customer(id) { _ in }
                var members: [(key: String, value: JSONValue)] = [("originalTransactionId", .string(id))]
                if case .object(let counted) = outcome.totals.json() { members += counted.members }
                if let failure = outcome.failure, case .object(let detail) = failure.json() { members += detail.members }
                Output.line(.object(JSONObject(members)))
                for warning in engine.takeProductWarnings() { Output.error(warning) }
                if outcome.failure == nil { synced += 1 } else { syncFailed += 1 }
                if case .engine? = outcome.failure {
                    try? engine.checkpoint()
                    return .storage
                }
                Output.error("entitlements \(command): \(index + 1)/\(originals.count) original transaction ids done (\(synced) synced, \(syncFailed) failed)")
            }
            if syncFailed > 0 { anyFailed = true }
        }
        try? engine.checkpoint()
        Output.line(
            [
                "receipts": .int(Int64(documents.count)), "appended": .int(Int64(totals.appended)),
                "duplicate": .int(Int64(totals.duplicate)), "rejected": .int(Int64(totals.rejected)),
                "originalTransactionIds": .int(Int64(originals.count)), "synced": .int(Int64(synced)),
                "syncFailed": .int(Int64(syncFailed)),
            ])
        return anyFailed ? .rejected : .success
    }

    /// Syncs the original transaction ids of the V1 notifications `engine` rejected, when
    /// `appStoreServerAPI` is configured: the signed truth of what they announced. Reports
    /// on standard error (standard output holds the acknowledgments).
    static func syncV1Hints(_ engine: Engine, command: String) {
        let hints = engine.takeV1SyncHints()
        guard !hints.isEmpty, engine.configuration.appStoreServerAPI != nil else { return }
        let sync: AppStoreSync
        do { sync = try AppStoreSync(engine: engine) } catch {
            Output.error("entitlements \(command): cannot sync the V1 notifications' original transaction ids: \(error.code): \(error.message)")
            return
        }
        for id in hints { Output.error(v1SyncLine(id, sync.customer(id) { _ in }, command: command)) }
    }

    /// The line on standard error that reports the sync of a V1 notification's original transaction id.
    static func v1SyncLine(_ id: String, _ outcome: SyncOutcome, command: String) -> String {
        let totals = JSONWriter.string(outcome.totals.json())
        guard let failure = outcome.failure else {
            return "entitlements \(command): V1 notification: synced original transaction id \(id): \(totals)"
        }
        return "entitlements \(command): V1 notification: the sync of original transaction id \(id) failed: \(JSONWriter.string(failure.json())) (before it stopped: \(totals))"
    }
}
