import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
    // MARK: replay

    static func replay(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "replay", valued: ["--db", "--config"], switches: ["--diff", "--reverify", "--check", "--progress", "--quiet"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "replay")
        }
        let (loaded, code) = try loadEngine(arguments, command: "replay", mode: .existing, warnRules: false)
        guard let engine = loaded else { return code }
        let showProgress = !arguments.flags.contains("--quiet") && (arguments.flags.contains("--progress") || Output.stderrIsTerminal)
        let meter = ProgressMeter(enabled: showProgress)
        do {
            if arguments.flags.contains("--reverify") {
                let audit = try engine.audit(progress: { meter.report(label: "re-verified", done: $0, total: nil) })
                meter.finish(label: "re-verified", done: audit.events)
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
            // The rules just applied, checked against every product the log names.
            let check = RulesCheck(rules: engine.configuration.rules, productsSeen: report.productsSeen)
            func findings(_ list: [RulesCheck.Finding]) -> JSONValue {
                .array(list.map { ["productId": .string($0.productId), "didYouMean": $0.didYouMean.map(JSONValue.string) ?? .null] })
            }
            if arguments.flags.contains("--check") {
                object["rulesCheck"] = ["productsNotInRules": findings(check.notInRules), "productsNotInData": findings(check.notInData)]
            }
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
            // Before any data, every configured product is unseen: nothing worth saying.
            if !report.productsSeen.isEmpty {
                for finding in check.notInData { Output.error(Engine.warning(notInData: finding)) }
            }
            return .success
        } catch {
            meter.finish()
            return storageFailure("replay", error)
        }
    }
}
