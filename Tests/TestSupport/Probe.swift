import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

/// Reads a database file directly, behind the engine's back.
package struct Probe {
    package let connection: Connection

    package init(_ path: String) throws {
        connection = try Connection(path: path, mode: .readWrite)
    }

    package func strings(_ sql: String) throws -> [String] {
        let statement = try connection.prepare(sql)
        var values: [String] = []
        while try statement.step() { values.append(statement.string(0) ?? "") }
        return values
    }

    package func int(_ sql: String) throws -> Int64 { try connection.scalarInt(sql) ?? -1 }

    /// The input logged at `seq` as received (the JWS given back from its stored parts).
    package func loggedInput(_ seq: Int64) throws -> String {
        try EventStore(path: connection.path, hash: { $0 }, mode: .readOnly).loggedInput(at: seq)
    }

    /// Every event identity, once per row (so a doubled event would show twice).
    /// A standalone transaction's or renewal info's identity ends in `:` and a
    /// 32-digit digest of its signed payload (section 3), left out here: the
    /// histories name events by kind, id and signedDate.
    package func identities() throws -> [String] {
        try strings(
            "SELECT CASE WHEN kind IN ('transaction', 'renewalInfo') THEN substr(identity, 1, length(identity) - 33) ELSE identity END FROM events ORDER BY seq")
    }
    package func eventIds() throws -> Set<String> { Set(try strings("SELECT event_id FROM events")) }
    package func eventCount() throws -> Int64 { try int("SELECT count(*) FROM events") }
    package func quarantineCount() throws -> Int64 { try int("SELECT count(*) FROM quarantine") }
    /// `hex(input_hash) code` of every quarantined input, once per row.
    package func quarantine() throws -> [String] { try strings("SELECT hex(input_hash) || ' ' || code FROM quarantine ORDER BY 1") }
    /// Every customer with at least one event.
    package func customers() throws -> [String] { try strings("SELECT DISTINCT customer_key FROM event_facts ORDER BY 1") }
    package func execute(_ sql: String) throws { try connection.execute(sql) }
}

/// The moments at which states are compared: across the histories' lifetimes and now.
package let moments: [Int64] = {
    let base = TestPayloads.january2025
    let day: Int64 = 86_400_000
    return [base - day, base + 10 * day, base + 40 * day, base + 100 * day, base + 200 * day, base + 400 * day,
            base + 3 * 365 * day, 4_102_444_800_000]
}()

/// The answer (`query` JSON) for every customer at every moment in ``moments``:
/// what the engine would tell an app server.
package func answers(_ engine: Engine, customers: [String]) throws -> [String: String] {
    var answers: [String: String] = [:]
    for customer in customers {
        for at in moments {
            answers["\(customer)@\(at)"] = JSONWriter.string(try engine.query(.appTransactionId(customer), at: at).json())
        }
    }
    return answers
}

/// The first few differences between two sets of answers, for a readable failure.
package func differences(_ a: [String: String], _ b: [String: String], limit: Int = 3) -> String {
    var out: [String] = []
    for key in Set(a.keys).union(b.keys).sorted() where a[key] != b[key] {
        out.append("\(key):\n  \(a[key] ?? "nil")\n  \(b[key] ?? "nil")")
        if out.count >= limit { break }
    }
    return out.joined(separator: "\n")
}

/// Parses NDJSON output lines; an incomplete last line (a process killed mid-write) is dropped.
package func outputObjects(_ stdout: String) -> [JSONValue] {
    var lines = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if let last = lines.last, !stdout.hasSuffix("\n") || last.isEmpty { lines.removeLast() }
    return lines.compactMap { try? JSONParser().parse($0) }
}

package func text(_ value: JSONValue?) -> String? {
    if case .string(let text)? = value { return text }
    return nil
}
