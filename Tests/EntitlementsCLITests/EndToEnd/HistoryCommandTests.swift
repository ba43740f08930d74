import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `entitlements history` (specification section 7) through the command line and the library.
@Suite struct HistoryCommandTests {
    static let day: Int64 = 86_400_000

    @Test func supportSessionThroughTheCommandLine() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let t0 = TestPayloads.january2025
        let input = [
            E2E.notification(
                "SUBSCRIBED", "INITIAL_BUY", signed: t0 + 100,
                transaction: TestPayloads.transaction(purchaseDate: t0, expiresDate: t0 + 30 * Self.day, signedDate: t0 + 50),
                renewal: TestPayloads.renewalInfo(signedDate: t0 + 50)),
            E2E.notification(
                "DID_RENEW", signed: t0 + 30 * Self.day + 100,
                transaction: TestPayloads.transaction(
                    transactionId: "2000000000000002", originalTransactionId: "2000000000000001", purchaseDate: t0 + 30 * Self.day,
                    expiresDate: t0 + 60 * Self.day, signedDate: t0 + 30 * Self.day + 50),
                renewal: TestPayloads.renewalInfo(signedDate: t0 + 30 * Self.day + 50)),
        ].joined(separator: "\n")
        let file = folder.appendingPathComponent("in.ndjson")
        try Data(input.utf8).write(to: file)
        let ingest = try E2E.run(["ingest", "--config", config, file.path], in: folder)
        #expect(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")

        let history = try E2E.run(["history", "--config", config, "--app-transaction-id", "704000000000000001"], in: folder)
        #expect(history.status == 0, "\(history.stderr)")
        let lines = history.lines
        #expect(lines.count == 5)
        #expect(history.stdout.split(separator: "\n").first.map(String.init) == #"{"at":\#(t0),"entitlement":"pro","active":true,"expiresDate":\#(t0 + 30 * Self.day),"productId":"com.example.pro.monthly","cause":{"kind":"transaction","id":"2000000000000001","field":"purchaseDate","notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY"}}"#)
        #expect(lines[1]["subscription"] == "2000000000000001")
        #expect(lines[1]["status"] == "active")
        #expect(lines[1]["previous"] == .null)
        #expect(lines[2]["at"] == .int(t0 + 30 * Self.day))
        #expect(lines[2]["expiresDate"] == .int(t0 + 60 * Self.day))
        #expect(lines[2]["cause"]?["notificationType"] == "DID_RENEW")
        #expect(lines[3]["active"] == false)
        #expect(lines[4]["status"] == "expired")
        #expect(lines[4]["previous"] == "active")

        // The same customer found by either transaction, or its subscription.
        for selector in [["--transaction-id", "2000000000000002"], ["--original-transaction-id", "2000000000000001"]] {
            let same = try E2E.run(["history", "--config", config] + selector, in: folder)
            #expect(same.status == 0 && same.stdout == history.stdout, "\(selector)")
        }
        // --until in milliseconds or ISO 8601; before the first event: empty.
        let until = try E2E.run(["history", "--config", config, "--app-transaction-id", "704000000000000001", "--until", "\(t0 + 30 * Self.day)"], in: folder)
        #expect(until.lines.count == 3)
        let iso = try E2E.run(["history", "--config", config, "--app-transaction-id", "704000000000000001", "--until", "2024-12-31T00:00:00Z"], in: folder)
        #expect(iso.status == 0 && iso.stdout.isEmpty)
        // Unknown ids: NOT_FOUND, exit 1; a bad --until: usage error.
        let unknown = try E2E.run(["history", "--config", config, "--transaction-id", "999"], in: folder)
        #expect(unknown.status == 1)
        #expect(unknown.lines.first?["error"]?["code"] == "NOT_FOUND")
        #expect(try E2E.run(["history", "--config", config, "--app-transaction-id", "704000000000000009"], in: folder).status == 1)
        #expect(try E2E.run(["history", "--config", config, "--app-transaction-id", "704000000000000001", "--until", "12345"], in: folder).status == 2)
        #expect(try E2E.run(["history", "--config", config], in: folder).status == 2)

        // The library gives the same lines, Encodable to the same keys.
        let engine = try E2E.engine(path: folder.appendingPathComponent("entitlements.sqlite").path)
        guard case .lines(let key, let values) = try engine.history(.appTransactionId("704000000000000001")) else {
            Issue.record("not found through the library")
            return
        }
        #expect(key == "704000000000000001")
        #expect(values.map { JSONWriter.string($0.json()) }.joined(separator: "\n") + "\n" == history.stdout)
        // JSONEncoder does not keep key order: the same keys and values, in any order.
        let encoded = try JSONParser().parse(Array(try JSONEncoder().encode(values[0])))
        #expect(Self.sorted(encoded) == Self.sorted(values[0].json()))
    }

    /// `value` with every object's keys sorted.
    static func sorted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            return .object(JSONObject(object.members.sorted { $0.key < $1.key }.map { (key: $0.key, value: sorted($0.value)) }))
        case .array(let elements): return .array(elements.map(sorted))
        default: return value
        }
    }
}
