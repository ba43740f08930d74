import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
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
            meter.finish(label: "audited", done: report.events)
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
            // A known head beyond the log's end: how many committed events the log lacks.
            if report.missingEvents > 0 { object["missingEvents"] = .int(report.missingEvents) }
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
