import EntitlementCore
import Entitlements
import Foundation
import Testing

/// What a database must hold after ingesting `history`, however it got there
/// (killed, raced, resumed): compared with a reference database that ingested the
/// same inputs once, without interruption.
///
/// - every verified event is in the log exactly once (the same identities, none twice);
/// - every rejected input is in quarantine exactly once (the same inputs and codes);
/// - every projection equals a full replay (`replay` changes nothing, answers stay the same);
/// - every customer gets the same answers as from the reference, at many moments;
/// - the hash chain and every stored JWS check out (`audit`).
package func expectSameAsReference(
    workspace: Workspace, database: String, reference: String, history: History,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let probe = try Probe(workspace.path(database))
    let referenceProbe = try Probe(workspace.path(reference))

    let identities = try probe.identities()
    let stored = Set(identities)
    let referenceStored = Set(try referenceProbe.identities())
    let doubled = identities.count - stored.count
    #expect(doubled == 0, "\(doubled) events are in the log twice", sourceLocation: sourceLocation)
    let missing = history.identities.subtracting(stored).sorted()
    let unexpected = stored.subtracting(history.identities).sorted()
    #expect(missing.isEmpty && unexpected.isEmpty,
            "log differs from the expected events: \(missing.count) missing \(missing.prefix(3)), \(unexpected.count) unexpected \(unexpected.prefix(3))",
            sourceLocation: sourceLocation)
    let sameAsReference = stored == referenceStored
    #expect(sameAsReference, "log differs from the reference log", sourceLocation: sourceLocation)

    let quarantine = try probe.quarantine()
    let referenceQuarantine = try referenceProbe.quarantine()
    let quarantineMatches = quarantine == referenceQuarantine
    #expect(quarantineMatches, "quarantine differs from the reference: \(quarantine.count) rows vs \(referenceQuarantine.count)", sourceLocation: sourceLocation)
    let quarantineDoubled = quarantine.count - Set(quarantine).count
    #expect(quarantineDoubled == 0, sourceLocation: sourceLocation)
    #expect(quarantine.count == history.distinctRejectedLines, sourceLocation: sourceLocation)

    let customers = try referenceProbe.customers()
    let sameCustomers = try probe.customers() == customers
    #expect(sameCustomers, sourceLocation: sourceLocation)

    let engine = try workspace.engine(database)
    let before = try answers(engine, customers: customers)
    let referenceAnswers = try answers(try workspace.engine(reference), customers: customers)
    let sameAnswers = before == referenceAnswers
    #expect(sameAnswers, "answers differ from the reference:\n\(differences(before, referenceAnswers))", sourceLocation: sourceLocation)

    let audit = try engine.audit()
    #expect(audit.firstMismatch == nil && audit.triggersPresent, "audit: \(String(describing: audit.firstMismatch))", sourceLocation: sourceLocation)
    #expect(audit.events == Int64(history.identities.count), sourceLocation: sourceLocation)

    let replay = try engine.replay(now: moments[3])
    #expect(replay.changed == 0, "a projection differs from a full replay: \(replay.changed) customers", sourceLocation: sourceLocation)
    #expect(replay.events == Int64(history.identities.count), sourceLocation: sourceLocation)
    let after = try answers(engine, customers: customers)
    let unchanged = after == before
    #expect(unchanged, "answers changed by a replay:\n\(differences(before, after))", sourceLocation: sourceLocation)
}

/// Checks `ingest` output lines against what the history's lines must become.
package func expectOutcomes(_ stdout: String, for lines: [InputLine], sourceLocation: SourceLocation = #_sourceLocation) {
    let objects = outputObjects(stdout)
    let expected = lines.flatMap(\.items)
    #expect(objects.count == expected.count, "\(objects.count) result lines for \(expected.count) items", sourceLocation: sourceLocation)
    var wrong: [String] = []
    for (object, item) in zip(objects, expected) {
        let result = text(object["result"])
        switch item {
        case .event:
            if result != "appended" && result != "duplicate" { wrong.append("expected an event, got \(JSONWriter.string(object))") }
        case .rejected(let code):
            if result != "rejected" || text(object["error"]?["code"]) != code {
                wrong.append("expected \(code), got \(JSONWriter.string(object))")
            }
        }
    }
    #expect(wrong.isEmpty, "\(wrong.count) wrong results: \(wrong.prefix(3))", sourceLocation: sourceLocation)
}

/// Reads an integer parameter from the environment (for the long runs the scripts start).
package func parameter(_ name: String, _ fallback: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
}
