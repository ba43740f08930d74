import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// Specification section 13, "the database keeps its active rules": `replay` alone
/// applies a configuration's rules; every other command, in any process, answers
/// under the database's and warns when its own differ. And `replay` checks the rules
/// it applies against the products in the log (section 4).
@Suite struct ActiveRulesTests {
    static let lifetime = "com.example.lifetime"
    static let customer = "704000000000013001"

    /// A non-consumable bought by ``customer``.
    static func purchase() -> String {
        E2E.notification(
            "ONE_TIME_CHARGE", uuid: "a0000000-0000-4000-8000-000000013001", signed: TestPayloads.january2025 + 1000,
            transaction: TestPayloads.transaction(
                transactionId: "2000000000130011", appTransactionId: customer, productId: lifetime, type: "Non-Consumable",
                expiresDate: nil))
    }

    /// The suite's rules under `version`, with `products` replacing theirs.
    static func rules(_ version: String, _ products: [String: JSONValue]) -> JSONValue {
        var object = JSONObject()
        for (id, rule) in products.sorted(by: { $0.key < $1.key }) { object[id] = rule }
        return ["version": .string(version), "gracePeriodGrantsAccess": true, "billingRetryGrantsAccess": false, "products": .object(object)]
    }

    /// A folder holding a configuration with `rules`.
    static func config(_ root: URL, _ name: String, rules: JSONValue) throws -> String {
        let folder = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try E2E.writeConfig(in: folder, rules: rules)
    }

    static func entitlements(_ run: E2E.Run) -> [String] {
        guard case .object(let object)? = run.lines.first?["entitlements"] else { return [] }
        return object.keys.sorted()
    }

    @Test("every command answers under the database's rules and warns; replay alone applies the configuration's")
    func theDatabaseKeepsItsRules() throws {
        let root = E2E.folder()
        let database = root.appendingPathComponent("rules.sqlite").path
        let v1 = try Self.config(root, "v1", rules: Self.rules("v1", [Self.lifetime: ["entitlements": ["pro"]]]))
        let v2 = try Self.config(root, "v2", rules: Self.rules("v2", [Self.lifetime: ["entitlements": ["pro", "support"]]]))
        let query = ["query", "--db", database, "--app-transaction-id", Self.customer]

        // A fresh database takes the rules of its first user.
        let ingest = try E2E.run(["ingest", "--db", database, "--config", v1], stdin: Self.purchase() + "\n")
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(!ingest.stderr.contains("warning"), "\(ingest.stderr)")

        // Another configuration: answered under the database's rules, and said so.
        let before = try E2E.run(query + ["--config", v2])
        #expect(before.status == 0, "\(before.stderr)")
        #expect(Self.entitlements(before) == ["pro"], "\(before.stdout)")
        #expect(before.stderr.contains(#"answering under the database's rules "v1"; run replay to apply "v2""#), "\(before.stderr)")
        let history = try E2E.run(["history", "--db", database, "--config", v2, "--app-transaction-id", Self.customer])
        #expect(history.stderr.contains(#"run replay to apply "v2""#), "\(history.stderr)")
        // An ingest under other rules projects under the database's too, and says so.
        let again = try E2E.run(["ingest", "--db", database, "--config", v2], stdin: Self.purchase() + "\n")
        #expect(again.stderr.contains(#"answering under the database's rules "v1""#), "\(again.stderr)")
        #expect(Self.entitlements(try E2E.run(query + ["--config", v1])) == ["pro"])

        // replay applies the configuration's rules: now they are the database's.
        let replay = try E2E.run(["replay", "--db", database, "--config", v2])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(!replay.stderr.contains("answering under"), "\(replay.stderr)")
        let after = try E2E.run(query + ["--config", v2])
        #expect(Self.entitlements(after) == ["pro", "support"], "\(after.stdout)")
        #expect(!after.stderr.contains("warning"), "\(after.stderr)")
        // The old configuration now gets the new answer, and the warning the other way round.
        let old = try E2E.run(query + ["--config", v1])
        #expect(Self.entitlements(old) == ["pro", "support"], "\(old.stdout)")
        #expect(old.stderr.contains(#"answering under the database's rules "v2"; run replay to apply "v1""#), "\(old.stderr)")

        // Same version, other content: still a difference, named as such.
        let v2b = try Self.config(root, "v2b", rules: Self.rules("v2", [Self.lifetime: ["entitlements": ["gold"]]]))
        let same = try E2E.run(query + ["--config", v2b])
        #expect(Self.entitlements(same) == ["pro", "support"])
        #expect(same.stderr.contains("differ in content"), "\(same.stderr)")
    }

    @Test("each command says once that the rules differ")
    func theWarningIsSaidOnce() throws {
        let root = E2E.folder()
        let database = root.appendingPathComponent("once.sqlite").path
        let v1 = try Self.config(root, "v1", rules: Self.rules("v1", [Self.lifetime: ["entitlements": ["pro"]]]))
        let v2 = try Self.config(root, "v2", rules: Self.rules("v2", [Self.lifetime: ["entitlements": ["pro", "support"]]]))
        #expect(try E2E.run(["ingest", "--db", database, "--config", v1], stdin: Self.purchase() + "\n").status == 0)
        let empty = root.appendingPathComponent("receipts.ndjson")
        try Data().write(to: empty)
        let commands: [[String]] = [
            ["query", "--app-transaction-id", Self.customer],
            ["revenue"],
            ["metrics", "--from", "2025-01-01T00:00:00Z", "--to", "2025-02-01T00:00:00Z"],
            ["migrate-receipts", empty.path],
        ]
        for arguments in commands {
            let run = try E2E.run(arguments + ["--db", database, "--config", v2])
            #expect(run.stderr.components(separatedBy: "answering under the database's rules").count == 2, "\(arguments): \(run.stderr)")
        }
    }

    @Test("one database, one answer: engines opened with different rules answer alike, and follow another's replay")
    func oneAnswerWhicheverProcessAsks() throws {
        let path = E2E.folder().appendingPathComponent("shared.sqlite").path
        var other = E2E.rules
        other.version = "e2e-other"
        other.products[Self.lifetime] = ProductRule(entitlements: ["pro", "support"])
        let first = try E2E.engine(path: path)
        let second = try E2E.engine(rules: other, path: path)
        _ = try second.ingest([InputBytes(Self.purchase())])
        // The database took the rules of the engine that opened it first.
        #expect(try second.activeRules() == E2E.rules)
        #expect(second.rulesWarning()?.contains(#"answering under the database's rules "e2e-1""#) == true)
        #expect(first.rulesWarning() == nil)
        let asked = CustomerQuery.appTransactionId(Self.customer)
        guard case .customer(let a) = try first.query(asked), case .customer(let b) = try second.query(asked) else {
            Issue.record("the customer is unknown")
            return
        }
        #expect(a.entitlements.map(\.name).sorted() == ["pro"])
        #expect(b.entitlements.map(\.name).sorted() == a.entitlements.map(\.name).sorted())

        // A replay by the second engine changes what the first, still open, answers.
        _ = try second.replay()
        #expect(try first.activeRules() == other)
        guard case .customer(let c) = try first.query(asked) else {
            Issue.record("the customer is unknown")
            return
        }
        #expect(c.entitlements.map(\.name).sorted() == ["pro", "support"])
        #expect(first.rulesWarning()?.contains(#"run replay to apply "e2e-1""#) == true)
        #expect(second.rulesWarning() == nil)
    }

    @Test("replay checks its rules against the data: products not in the rules, products in no data, did you mean")
    func replayChecksTheRulesAgainstTheData() throws {
        let root = E2E.folder()
        let database = root.appendingPathComponent("check.sqlite").path
        let good = try Self.config(root, "good", rules: Self.rules("good", [Self.lifetime: ["entitlements": ["pro"]]]))
        let typo = "com.example.lifetim"
        let typoed = try Self.config(
            root, "typo",
            rules: Self.rules(
                "typo", [typo: ["entitlements": ["pro"]], "com.example.coins.500": ["currency": "coins", "units": 500]]))
        _ = try E2E.run(["ingest", "--db", database, "--config", good], stdin: Self.purchase() + "\n")

        let replay = try E2E.run(["replay", "--db", database, "--config", typoed, "--check"])
        #expect(replay.status == 0, "\(replay.stderr)")
        guard let report = replay.lines.first else {
            Issue.record("no report: \(replay.stdout)")
            return
        }
        #expect(report["rulesVersion"] == "typo")
        #expect(report["rulesCheck"]?["productsNotInRules"] == [["productId": .string(Self.lifetime), "didYouMean": .string(typo)]])
        #expect(
            report["rulesCheck"]?["productsNotInData"]
                == [["productId": "com.example.coins.500", "didYouMean": .null], ["productId": .string(typo), "didYouMean": .string(Self.lifetime)]])
        #expect(
            replay.stderr.contains("warning: product \(Self.lifetime) is not in rules.products: it grants nothing (did you mean \(typo)?)"),
            "\(replay.stderr)")
        #expect(replay.stderr.contains("warning: product \(typo) is in rules.products but in no ingested data (did you mean \(Self.lifetime)?)"))
        #expect(replay.stderr.contains("note: product com.example.coins.500 is in rules.products but in no ingested data yet"))

        // Every later command warns of the product the database's rules lack, with the suggestion.
        let query = try E2E.run(["query", "--db", database, "--config", typoed, "--app-transaction-id", Self.customer])
        #expect(query.stderr.contains("(did you mean \(typo)?)"), "\(query.stderr)")
        #expect(Self.entitlements(query).isEmpty)

        // Rules that fit the data: an empty check.
        let fixed = try E2E.run(["replay", "--db", database, "--config", good, "--check"])
        let plain = try E2E.run(["replay", "--db", database, "--config", good])
        #expect(plain.lines.first?["rulesCheck"] == nil, "without --check, the specification's four fields alone: \(plain.stdout)")
        #expect(fixed.lines.first?["rulesCheck"] == ["productsNotInRules": [], "productsNotInData": []], "\(fixed.stdout)")
        #expect(!fixed.stderr.contains("rules.products"), "\(fixed.stderr)")
    }

    @Test("the closest configured name is suggested only when it is near enough to be a typo")
    func suggestions() {
        #expect(RulesCheck.editDistance("kitten", "sitting") == 3)
        #expect(RulesCheck.editDistance("", "abc") == 3)
        #expect(RulesCheck.editDistance("abcdef", "abcdef") == 0)
        #expect(RulesCheck.editDistance("abcdefgh", "zzzzzzzz", limit: 2) == 3)
        let configured = ["com.example.pro.monthly", "com.example.pro.yearly", "com.example.coins.100"]
        #expect(RulesCheck.closest(to: "com.example.pro.montly", among: configured) == "com.example.pro.monthly")
        #expect(RulesCheck.closest(to: "com.example.Pro.Monthly", among: configured) == "com.example.pro.monthly")
        #expect(RulesCheck.closest(to: "com.example.coins.1000", among: configured) == "com.example.coins.100")
        // A new product is not a typo of an old one.
        #expect(RulesCheck.closest(to: "com.example.pro.weekly", among: configured) == nil)
        #expect(RulesCheck.closest(to: "com.other.thing", among: configured) == nil)
        let check = RulesCheck(
            rules: Rules(version: "1", products: ["com.example.pro.montly": ProductRule(entitlements: ["pro"])]),
            productsSeen: ["com.example.pro.monthly"])
        #expect(check.notInRules == [.init(productId: "com.example.pro.monthly", didYouMean: "com.example.pro.montly")])
        #expect(check.notInData == [.init(productId: "com.example.pro.montly", didYouMean: "com.example.pro.monthly")])
    }
}
