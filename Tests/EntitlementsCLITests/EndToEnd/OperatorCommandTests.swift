import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `grant`, `revoke-grant`, `credit`, `link` and `query --app-user-id` through the command
/// line (specification section 13), on cases worked by hand.
@Suite struct OperatorCommandTests {
    static let t0 = TestPayloads.january2025
    static let day: Int64 = 86_400_000
    static let customer = "704000000000000001"
    static let other = "704000000000000002"
    static let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"

    /// A monthly subscription bought at t0 (expiring after 30 days) carrying an account token,
    /// a pack of 100 coins for the customer, and a lifetime purchase for another customer.
    static func workspace(appUsers: JSONValue? = nil) throws -> (URL, String) {
        let folder = E2E.folder()
        var config = try E2E.writeConfig(in: folder)
        if let appUsers {
            guard case .object(var object) = try JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: config)))) else {
                throw CocoaError(.fileReadCorruptFile)
            }
            object["appUsers"] = appUsers
            config = folder.appendingPathComponent("config-app-users.json").path
            try Data(JSONWriter.string(.object(object)).utf8).write(to: URL(fileURLWithPath: config))
        }
        func body(_ transaction: JSONValue) -> String { TestPayloads.body(signedTransactionInfo: E2E.pki.sign(transaction)) }
        let input = [
            body(TestPayloads.transaction(transactionId: "2000000000000001", purchaseDate: t0, expiresDate: t0 + 30 * day, appAccountToken: token)),
            body(TestPayloads.transaction(
                transactionId: "3000000000000001", productId: "com.example.coins.100", type: "Consumable", purchaseDate: t0, expiresDate: nil)),
            body(TestPayloads.transaction(
                transactionId: "4000000000000001", appTransactionId: other, productId: "com.example.lifetime", type: "Non-Consumable",
                purchaseDate: t0, expiresDate: nil)),
        ].joined(separator: "\n")
        try Data(input.utf8).write(to: folder.appendingPathComponent("in.ndjson"))
        let ingest = try E2E.run(["ingest", "--config", config, "in.ndjson"], in: folder)
        #expect(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")
        return (folder, config)
    }

    static func events(_ config: String, in folder: URL) throws -> Int64? {
        if case .int(let count)? = try E2E.run(["audit", "--config", config], in: folder).lines.first?["events"] { return count }
        return nil
    }

    @Test func grantsThroughTheCommandLineWithTheirRules() throws {
        let (folder, config) = try Self.workspace()
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        func at(_ days: Int64) -> String { String(Self.t0 + days * Self.day) }
        func pro(atDay days: Int64) throws -> JSONValue? {
            try run(["query", "--app-transaction-id", Self.customer, "--at", at(days)]).lines.first?["entitlements"]?["pro"]
        }

        let grant = ["grant", "--id", "g1", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--from", at(20), "--until", at(40),
                     "--operator", "alice", "--reason", "outage"]
        let first = try run(grant)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout == #"{"result":"appended","id":"g1"}"# + "\n")
        let again = try run(grant)
        #expect(again.status == 0)
        #expect(again.stdout == #"{"result":"duplicate","id":"g1"}"# + "\n")
        let other = try run(["grant", "--id", "g1", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--from", at(20), "--until", at(41),
                             "--operator", "alice", "--reason", "outage"])
        #expect(other.status == 1)
        #expect(other.lines.first?["error"]?["code"] == "GRANT_CONFLICT")

        // Before the grant: the purchase; while both grant: the later expiry (the grant); after the purchase: the grant.
        #expect(try pro(atDay: 10) == ["active": true, "expiresDate": .int(Self.t0 + 30 * Self.day), "productId": "com.example.pro.monthly", "source": "purchase"])
        #expect(try pro(atDay: 25) == ["active": true, "expiresDate": .int(Self.t0 + 40 * Self.day), "productId": nil, "source": "grant", "grantId": "g1"])
        #expect(try pro(atDay: 35)?["grantId"] == "g1")
        #expect(try pro(atDay: 40)?["active"] == false)
        // A grant ending with the purchase: the purchase wins the tie.
        #expect(try run(["grant", "--id", "tie", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--from", at(26), "--until", at(30)]).status == 0)
        #expect(try pro(atDay: 19)?["source"] == "purchase")

        // Revoked at day 36: active until then, not after; the same again is a duplicate, another moment a conflict.
        let revoke = try run(["revoke-grant", "--id", "g1", "--at", at(36), "--operator", "bob"])
        #expect(revoke.stdout == #"{"result":"appended","id":"g1"}"# + "\n")
        #expect(try run(["revoke-grant", "--id", "g1", "--at", at(36)]).lines.first?["result"] == "duplicate")
        let moved = try run(["revoke-grant", "--id", "g1", "--at", at(37)])
        #expect(moved.status == 1 && moved.lines.first?["error"]?["code"] == "ID_CONFLICT")
        #expect(try pro(atDay: 35)?["expiresDate"] == .int(Self.t0 + 36 * Self.day))
        #expect(try pro(atDay: 36)?["active"] == false)
        let missing = try run(["revoke-grant", "--id", "nope"])
        #expect(missing.status == 1 && missing.lines.first?["error"]?["code"] == "NOT_FOUND")

        // Bad input: a precise error, nothing recorded.
        let count = try Self.events(config, in: folder)
        let bad: [([String], String)] = [
            (["grant", "--id", "b1", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--from", at(5), "--until", at(4)], "INVALID_GRANT"),
            (["grant", "--id", "b2", "--app-transaction-id", Self.customer, "--entitlement", "prro", "--days", "3"], "UNKNOWN_ENTITLEMENT"),
            (["grant", "--id", "b3", "--app-user-id", "", "--entitlement", "pro", "--days", "3"], "INVALID_APP_USER_ID"),
            (["grant", "--id", "b4", "--app-user-id", String(repeating: "u", count: 257), "--entitlement", "pro", "--days", "3"], "INVALID_APP_USER_ID"),
            (["grant", "--id", "b5", "--app-transaction-id", "1", "--entitlement", "pro", "--days", "3"], "NOT_FOUND"),
            (["credit", "--id", "b6", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "-101"], "INSUFFICIENT_BALANCE"),
            (["link", "--id", "b7", "--app-user-id", String(repeating: "é", count: 129), "--app-transaction-id", Self.customer], "INVALID_APP_USER_ID"),
        ]
        for (arguments, code) in bad {
            let refused = try run(arguments)
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.lines.first?["error"]?["code"] == .string(code), "\(arguments): \(refused.stdout)")
        }
        #expect(try Self.events(config, in: folder) == count)
        // An unknown entitlement with --force: granted, with a warning.
        let forced = try run(["grant", "--id", "f1", "--app-transaction-id", Self.customer, "--entitlement", "prro", "--days", "3", "--force"])
        #expect(forced.status == 0)
        #expect(forced.stderr.contains("warning: entitlement prro"))
        // Usage errors: exit 2.
        #expect(try run(["grant", "--id", "u1", "--app-transaction-id", Self.customer, "--entitlement", "pro"]).status == 2)
        #expect(try run(["grant", "--id", "u1", "--app-transaction-id", Self.customer, "--app-user-id", "x", "--entitlement", "pro", "--days", "1"]).status == 2)
        #expect(try run(["grant", "--id", "u1", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--until", "1700000000"]).status == 2)

        // Lifecycle: started, revoked, ended; the log audits and replays to the same state.
        let lifecycle = try run(["lifecycle"]).lines
        let grants = lifecycle.filter { ($0["grantId"] ?? nil) != nil }
        #expect(grants.contains { $0["id"] == "GRANT_STARTED:g1" && $0["effectiveAt"] == .int(Self.t0 + 20 * Self.day) && $0["entitlements"] == ["pro"] })
        #expect(grants.contains { $0["id"] == "GRANT_REVOKED:g1" && $0["effectiveAt"] == .int(Self.t0 + 36 * Self.day) })
        #expect(grants.contains { $0["id"] == "GRANT_ENDED:tie" && $0["effectiveAt"] == .int(Self.t0 + 30 * Self.day) })
        // Granted wholly in the past, g1's end was due at once and recorded then; the feed never retracts it.
        #expect(grants.filter { $0["id"] == "GRANT_ENDED:g1" }.count == 1)
        let history = try run(["history", "--app-transaction-id", Self.customer]).lines
        #expect(history.contains { $0["cause"]?["kind"] == "grant" && $0["cause"]?["id"] == "g1" })
        #expect(try run(["audit"]).lines.first?["ok"] == true)
        #expect(try run(["replay"]).lines.first?["changed"] == 0)
    }

    @Test func aGrantFromNowIsInTheChangesFeedAndItsRevocationToo() throws {
        let (folder, config) = try Self.workspace()
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        #expect(try run(["grant", "--id", "now", "--app-transaction-id", Self.customer, "--entitlement", "pro", "--days", "2"]).status == 0)
        let granted = try run(["changes"]).lines.last
        #expect(granted?["appTransactionId"] == .string(Self.customer))
        #expect(granted?["entitlement"] == "pro" && granted?["active"] == true)
        let query = try run(["query", "--app-transaction-id", Self.customer]).lines.first?["entitlements"]?["pro"]
        #expect(query?["grantId"] == "now")
        #expect(granted?["expiresDate"] == query?["expiresDate"])
        #expect(try run(["revoke-grant", "--id", "now"]).status == 0)
        let revoked = try run(["changes"]).lines.last
        #expect(revoked?["entitlement"] == "pro" && revoked?["active"] == false)
        #expect(try run(["lifecycle"]).lines.contains { $0["id"] == "GRANT_REVOKED:now" })
    }

    @Test func creditsAndAppUsersThroughTheCommandLine() throws {
        let (folder, config) = try Self.workspace()
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        #expect(try run(["credit", "--id", "c1", "--transaction-id", "3000000000000001", "--currency", "coins", "--units", "50", "--reason", "sorry"]).stdout
            == #"{"result":"appended","id":"c1"}"# + "\n")
        #expect(try run(["credit", "--id", "c1", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "50", "--reason", "sorry"]).lines.first?["result"] == "duplicate")
        let conflict = try run(["credit", "--id", "c1", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "51", "--reason", "sorry"])
        #expect(conflict.status == 1 && conflict.lines.first?["error"]?["code"] == "ID_CONFLICT")
        #expect(try run(["query", "--app-transaction-id", Self.customer]).lines.first?["balances"] == ["coins": 150])
        #expect(try run(["credit", "--id", "c2", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "-150"]).status == 0)
        let below = try run(["credit", "--id", "c3", "--app-transaction-id", Self.customer, "--currency", "coins", "--units", "-1"])
        #expect(below.status == 1 && below.lines.first?["error"]?["code"] == "INSUFFICIENT_BALANCE")

        // An app user: a link, its own grant and credit; query sums and unites.
        #expect(try run(["link", "--id", "l1", "--app-user-id", "acct-42", "--app-transaction-id", Self.customer, "--operator", "alice"]).stdout
            == #"{"result":"appended","id":"l1"}"# + "\n")
        #expect(try run(["link", "--id", "l1", "--app-user-id", "acct-42", "--app-transaction-id", Self.customer]).lines.first?["result"] == "duplicate")
        #expect(try run(["link", "--id", "l1", "--app-user-id", "acct-43", "--app-transaction-id", Self.customer]).lines.first?["error"]?["code"] == "ID_CONFLICT")
        #expect(try run(["link", "--id", "l2", "--app-user-id", "acct-42", "--app-transaction-id", Self.other]).status == 0)
        #expect(try run(["grant", "--id", "g-user", "--app-user-id", "acct-42", "--entitlement", "pro", "--days", "7"]).status == 0)
        #expect(try run(["credit", "--id", "c-user", "--app-user-id", "acct-42", "--currency", "coins", "--units", "7"]).status == 0)
        let user = try run(["query", "--app-user-id", "acct-42"])
        #expect(user.status == 0, "\(user.stderr)")
        let view = user.lines.first
        #expect(view?["appUserId"] == "acct-42")
        #expect(view?["customers"]?.element(0)?["appTransactionId"] == .string(Self.customer))
        #expect(view?["customers"]?.element(1)?["appTransactionId"] == .string(Self.other))
        #expect(view?["balances"] == ["coins": 7])
        // The lifetime purchase outlasts the grant: the purchase gives it.
        #expect(view?["entitlements"]?["pro"]?["source"] == "purchase")
        #expect(view?["grants"]?.element(0)?["grantId"] == "g-user")
        // What was given to the app user itself is not a customer.
        #expect(try run(["query", "--app-transaction-id", "user:acct-42"]).lines.first?["error"]?["code"] == "NOT_FOUND")
        let unknown = try run(["query", "--app-user-id", "acct-0"])
        #expect(unknown.status == 1 && unknown.lines.first?["error"]?["code"] == "NOT_FOUND")
        #expect(try run(["query", "--app-user-id", ""]).lines.first?["error"]?["code"] == "INVALID_APP_USER_ID")

        // Transfer (the default): a second link moves the customer, lifecycle TRANSFER.
        #expect(try run(["link", "--id", "l3", "--app-user-id", "acct-99", "--app-transaction-id", Self.customer]).status == 0)
        let transfer = try run(["lifecycle"]).lines.first { $0["type"] == "TRANSFER" }
        #expect(transfer?["id"] == "TRANSFER:l3" && transfer?["from"] == "acct-42" && transfer?["to"] == "acct-99")
        #expect(try run(["query", "--app-user-id", "acct-42"]).lines.first?["customers"]?.arrayCount == 1)
        #expect(try run(["query", "--app-user-id", "acct-99"]).lines.first?["customers"]?.element(0)?["appTransactionId"] == .string(Self.customer))
        #expect(try run(["audit"]).lines.first?["ok"] == true)
        // The app user holding a grant and credits is rebuilt, and not counted as a customer.
        let replayed = try run(["replay"]).lines.first
        #expect(replayed?["changed"] == 0)
        #expect(replayed?["appTransactionIds"] == 2, "\(String(describing: replayed))")
    }

    @Test func keepRefusesASecondLinkAndAccountTokensLinkWhenAsked() throws {
        let (folder, config) = try Self.workspace(appUsers: ["fromAppAccountToken": true, "transfer": "keep"])
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        // The token in the signed data links the customer to the app user of the same lowercase UUID.
        let byToken = try run(["query", "--app-user-id", Self.token.lowercased()])
        #expect(byToken.status == 0, "\(byToken.stdout)")
        #expect(byToken.lines.first?["customers"]?.element(0)?["appTransactionId"] == .string(Self.customer))
        // Kept there: a link to another app user is refused, nothing recorded.
        let count = try Self.events(config, in: folder)
        let refused = try run(["link", "--id", "k1", "--app-user-id", "acct-1", "--app-transaction-id", Self.customer])
        #expect(refused.status == 1 && refused.lines.first?["error"]?["code"] == "LINK_CONFLICT")
        #expect(try Self.events(config, in: folder) == count)
        #expect(try run(["link", "--id", "k2", "--app-user-id", "acct-1", "--app-transaction-id", Self.other]).status == 0)
        let second = try run(["link", "--id", "k3", "--app-user-id", "acct-2", "--app-transaction-id", Self.other])
        #expect(second.status == 1 && second.lines.first?["error"]?["code"] == "LINK_CONFLICT")
        #expect(try run(["link", "--id", "k4", "--app-user-id", "acct-1", "--app-transaction-id", Self.other]).status == 0)

        // A configuration with a wrong appUsers field is a configuration error.
        let folder2 = E2E.folder()
        let bad = try Self.configWith(["transfer": "move"], in: folder2)
        let refusedConfig = try E2E.run(["query", "--config", bad, "--app-user-id", "x"], in: folder2)
        #expect(refusedConfig.status == 2 && refusedConfig.stderr.contains("appUsers.transfer"))
    }

    @Test func aLinkAwayFromTheAppUserOfTheAccountTokenIsATransfer() throws {
        let (folder, config) = try Self.workspace(appUsers: ["fromAppAccountToken": true])
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        #expect(try run(["link", "--id", "t1", "--app-user-id", "acct-1", "--app-transaction-id", Self.customer]).status == 0)
        #expect(try run(["link", "--id", "t2", "--app-user-id", "acct-2", "--app-transaction-id", Self.customer]).status == 0)
        let transfers = try run(["lifecycle"]).lines.filter { $0["type"] == "TRANSFER" }
        #expect(transfers.map { $0["id"] } == ["TRANSFER:t1", "TRANSFER:t2"])
        #expect(transfers.first?["from"] == .string(Self.token.lowercased()) && transfers.first?["to"] == "acct-1")
        #expect(transfers.last?["from"] == "acct-1" && transfers.last?["to"] == "acct-2")
        #expect(try run(["replay"]).lines.first?["changed"] == 0)

        // Without fromAppAccountToken the token names no app user: the first link moves nobody.
        let (plainFolder, plainConfig) = try Self.workspace(appUsers: ["fromAppAccountToken": false])
        #expect(try E2E.run(["link", "--id", "t1", "--app-user-id", "acct-1", "--app-transaction-id", Self.customer, "--config", plainConfig], in: plainFolder).status == 0)
        let none = try E2E.run(["lifecycle", "--config", plainConfig], in: plainFolder).lines.filter { $0["type"] == "TRANSFER" }
        #expect(none.isEmpty)
    }

    @Test func aRenewalUnderAnotherAccountTokenMovesTheCustomerToItsAppUser() throws {
        let (folder, config) = try Self.workspace(appUsers: ["fromAppAccountToken": true])
        func run(_ arguments: [String]) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        let newToken = "0B1D2C3A-0000-4000-8000-000000000042"
        let renewed = TestPayloads.body(
            signedTransactionInfo: E2E.pki.sign(
                TestPayloads.transaction(
                    transactionId: "2000000000000002", originalTransactionId: "2000000000000001", purchaseDate: Self.t0 + 30 * Self.day,
                    expiresDate: Self.t0 + 60 * Self.day, signedDate: Self.t0 + 30 * Self.day, appAccountToken: newToken)))
        try Data((renewed + "\n").utf8).write(to: folder.appendingPathComponent("renewed.ndjson"))
        #expect(try run(["ingest", "renewed.ndjson"]).status == 0)

        let transfers = try run(["lifecycle"]).lines.filter { $0["type"] == "TRANSFER" }
        #expect(transfers.map { $0["id"] } == [.string("TRANSFER:token:\(newToken.lowercased())@\(Self.t0 + 30 * Self.day)")])
        #expect(transfers.first?["from"] == .string(Self.token.lowercased()) && transfers.first?["to"] == .string(newToken.lowercased()))
        #expect(transfers.first?["effectiveAt"] == .int(Self.t0 + 30 * Self.day))
        let moved = try run(["query", "--app-user-id", newToken.lowercased()]).lines.first
        #expect(moved?["customers"]?.element(0)?["appTransactionId"] == .string(Self.customer))
        #expect(try run(["query", "--app-user-id", Self.token.lowercased()]).lines.first?["error"]?["code"] == "NOT_FOUND")
        // Replay derives the same: nothing changes, and the feed records nothing more.
        #expect(try run(["replay"]).lines.first?["changed"] == 0)
        #expect(try run(["lifecycle"]).lines.filter { $0["type"] == "TRANSFER" }.map { $0["id"] } == transfers.map { $0["id"] })
    }

    @Test func helpForEveryOperatorCommand() throws {
        for command in ["grant", "revoke-grant", "credit", "link"] {
            let help = try E2E.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.hasPrefix("entitlements \(command) "), "\(command)")
            #expect(help.stdout.contains("--operator NAME"))
        }
        #expect(try E2E.run(["query", "--help"]).stdout.contains("--app-user-id U"))
    }

    /// The operator's commands act on what a database holds: on a missing file (a typo)
    /// they create nothing (only `ingest`, `usage`, `serve` and `sync` create one). On a
    /// database that is there, `grant` and `credit` give an app user what needs no Apple
    /// data first.
    @Test func operatorCommandsNeverCreateADatabase() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let commands: [[String]] = [
            ["link", "--id", "l1", "--app-user-id", "acct-1", "--app-transaction-id", Self.customer],
            ["revoke-grant", "--id", "g1"],
            ["grant", "--id", "g1", "--app-user-id", "acct-1", "--entitlement", "pro", "--days", "1"],
            ["credit", "--id", "c1", "--app-user-id", "acct-2", "--currency", "coins", "--units", "5"],
        ]
        for arguments in commands {
            let run = try E2E.run(arguments + ["--db", "typo.sqlite", "--config", config], in: folder)
            #expect(run.status == 3, "\(arguments): \(run.stdout) \(run.stderr)")
            #expect(run.stdout.isEmpty && run.stderr.contains("DATABASE_NOT_FOUND"), "\(arguments)")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("typo.sqlite").path), "\(arguments)")
        }
        // A database made by an empty ingest holds no Apple data.
        try Data().write(to: folder.appendingPathComponent("empty.ndjson"))
        for name in ["fresh.sqlite", "fresh2.sqlite"] {
            let ingest = try E2E.run(["ingest", "--db", name, "--config", config, "empty.ndjson"], in: folder)
            #expect(ingest.status == 0, "\(ingest.stderr)")
        }
        let grant = try E2E.run(
            ["grant", "--id", "g1", "--app-user-id", "acct-1", "--entitlement", "pro", "--days", "1", "--db", "fresh.sqlite", "--config", config], in: folder)
        #expect(grant.status == 0 && grant.stdout.contains(#""result":"appended""#), "\(grant.stdout) \(grant.stderr)")
        let credit = try E2E.run(
            ["credit", "--id", "c1", "--app-user-id", "acct-2", "--currency", "coins", "--units", "5", "--db", "fresh2.sqlite", "--config", config], in: folder)
        #expect(credit.status == 0 && credit.stdout.contains(#""result":"appended""#), "\(credit.stdout) \(credit.stderr)")
        let query = try E2E.run(["query", "--app-user-id", "acct-1", "--db", "fresh.sqlite", "--config", config], in: folder)
        #expect(query.status == 0 && query.stdout.contains(#""pro""#), "\(query.stdout) \(query.stderr)")
    }

    @Test func theForcedGrantWarningFollowsTheDatabasesRulesAndOnlyWhatWasGranted() throws {
        let (folder, config) = try Self.workspace()
        func run(_ arguments: [String], config: String = config) throws -> E2E.Run { try E2E.run(arguments + ["--config", config], in: folder) }
        // A refused grant grants nothing "anyway".
        let refused = try run(["grant", "--id", "f0", "--app-transaction-id", Self.customer, "--entitlement", "prro", "--days", "0", "--force"])
        #expect(refused.status == 1 && refused.lines.first?["error"]?["code"] == "INVALID_GRANT")
        #expect(!refused.stderr.contains("warning: entitlement prro"), "\(refused.stderr)")

        // A configuration whose rules give "plus" while the database's active rules do not.
        let other = folder.appendingPathComponent("v2")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        let rules = JSONWriter.string(E2E.rules.canonicalJSON)
            .replacingOccurrences(of: #""version":"\#(E2E.rules.version)""#, with: #""version":"with-plus""#)
            .replacingOccurrences(of: #""entitlements":["pro"]"#, with: #""entitlements":["plus","pro"]"#)
        let v2 = try E2E.writeConfig(in: other, rules: try JSONParser().parse(Array(rules.utf8)))
        let unknown = try run(["grant", "--id", "p1", "--app-transaction-id", Self.customer, "--entitlement", "plus", "--days", "1"], config: v2)
        #expect(unknown.lines.first?["error"]?["code"] == "UNKNOWN_ENTITLEMENT", "\(unknown.stdout)")
        let forced = try run(["grant", "--id", "p1", "--app-transaction-id", Self.customer, "--entitlement", "plus", "--days", "1", "--force"], config: v2)
        #expect(forced.status == 0 && forced.lines.first?["result"] == "appended")
        #expect(forced.stderr.contains("warning: the configuration's rules \"with-plus\""), "\(forced.stderr)")
        #expect(forced.stderr.contains("warning: entitlement plus is not given by any product"), "\(forced.stderr)")
    }

    static func configWith(_ appUsers: JSONValue, in folder: URL) throws -> String {
        let path = try E2E.writeConfig(in: folder)
        guard case .object(var object) = try JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        object["appUsers"] = appUsers
        try Data(JSONWriter.string(.object(object)).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}

extension JSONValue {
    /// The element at `index` of an array (`nil` for anything else).
    fileprivate func element(_ index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The number of elements of an array (`nil` for anything else).
    fileprivate var arrayCount: Int? {
        if case .array(let elements) = self { return elements.count }
        return nil
    }
}
