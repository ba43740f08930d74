import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `usage --help` and `usage` agree on exit codes.
@Suite struct UsageHelpTests {
    @Test("usage --help lists INVALID_USAGE under exit 2, as usage --units -5 exits")
    func usageHelpExitCodes() throws {
        let help = try E2E.run(["usage", "--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
        guard let refused = help.range(of: "(exit 1):") else {
            Issue.record("no exit 1 list in: \(help)")
            return
        }
        let exitOne = help[refused.upperBound...].prefix { $0 != "." }
        #expect(!exitOne.contains("INVALID_USAGE"), "\(exitOne)")
        #expect(help.contains("(exit 2): INVALID_USAGE"), "\(help)")
        // And the behaviour the help now describes.
        let workspace = try Workspace(name: "usage-units")
        let run = try workspace.cli("usage", db: "db.sqlite", ["--id", "u1", "--app-transaction-id", "704200000000000093", "--currency", "coins", "--units", "-5"], timeout: 60)
        #expect(run.status == 2, "\(run.stdout) \(run.stderr)")
        #expect((run.stdout + run.stderr).contains("INVALID_USAGE"), "\(run.stdout) \(run.stderr)")
    }

    @Test("a whole number past 64 bits (usage, credit) is too large or too small, not no whole number")
    func unitsTooLarge() throws {
        let workspace = try Workspace(name: "usage-units-large")
        let run = try workspace.cli(
            "usage", db: "db.sqlite", ["--id", "u1", "--app-transaction-id", "704200000000000093", "--currency", "coins", "--units", "99999999999999999999"],
            timeout: 60)
        #expect(run.status == 2, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("--units 99999999999999999999 is too large: at most 9223372036854775807"), "\(run.stderr)")
        let credit = try workspace.cli(
            "credit", db: "db.sqlite", ["--id", "c1", "--app-transaction-id", "704200000000000093", "--currency", "coins", "--units", "-99999999999999999999"],
            timeout: 60)
        #expect(credit.status == 2, "\(credit.stdout) \(credit.stderr)")
        #expect(credit.stderr.contains("--units -99999999999999999999 is too small: at least -9223372036854775808"), "\(credit.stderr)")
        let word = try workspace.cli(
            "credit", db: "db.sqlite", ["--id", "c1", "--app-transaction-id", "704200000000000093", "--currency", "coins", "--units", "ten"], timeout: 60)
        #expect(word.status == 2 && word.stderr.contains("--units expects a whole number"), "\(word.stderr)")
        // A flag with narrower bounds names its own.
        let days = try workspace.cli(
            "grant", db: "db.sqlite", ["--id", "g1", "--app-user-id", "u1", "--entitlement", "pro", "--days", "99999999999999999999"], timeout: 60)
        #expect(days.status == 2 && days.stderr.contains("--days 99999999999999999999 is too large: at most 36500"), "\(days.stderr)")
    }
}
