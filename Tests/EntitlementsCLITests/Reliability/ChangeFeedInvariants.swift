import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// What the change feed of a database must satisfy however it got there
    /// (killed, resumed): read from cursor 0, each customer's changes end in
    /// exactly what `query` answers now, and no change is recorded twice (a line
    /// never repeats the answer its entitlement already had).
    static func expectFeedConsistent(
        workspace: Workspace, database: String, customers: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let engine = try workspace.engine(database)
        let records = try engine.changes()
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.cursor < $1.cursor }, sourceLocation: sourceLocation)
        var folded: [String: [String: Int64?]] = [:]
        var doubled: [ChangeRecord] = []
        for record in records {
            let previous = folded[record.appTransactionId]?[record.entitlement]
            let next: Int64?? = record.active ? .some(record.expiresDate) : nil
            if previous == next { doubled.append(record) }
            folded[record.appTransactionId, default: [:]][record.entitlement] = next
        }
        #expect(doubled.isEmpty, "changes recorded twice: \(doubled.prefix(3))", sourceLocation: sourceLocation)
        var answers: [String: [String: Int64?]] = [:]
        for key in customers {
            guard case .customer(let view) = try engine.query(.appTransactionId(key)) else { continue }
            let active = ReportedAnswer(view).active
            if !active.isEmpty { answers[key] = active }
        }
        let fold = folded.filter { !$0.value.isEmpty }
        #expect(fold == answers, "the feed does not end in what query answers: \(fold.count) vs \(answers.count) customers", sourceLocation: sourceLocation)
    }
}
