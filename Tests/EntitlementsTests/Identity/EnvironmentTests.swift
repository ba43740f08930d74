import EntitlementCore
import Entitlements
import EventStore
import Foundation
import SchemaMigrations
import TestPKI
import Testing
import TestSupport

/// Specification section 2: several environments in one database, each event's
/// environment, and a database bound to its app.
@Suite struct EnvironmentTests {
    let t0 = TestPayloads.january2025

    func configuration(_ environments: [AppStoreEnvironment], bundleId: String = TestPayloads.bundleId) -> EngineConfiguration {
        EngineConfiguration(
            bundleId: bundleId, appAppleId: TestPayloads.appAppleId, environment: environments[0], environments: environments,
            rootCertificatesDER: [E2E.pki.rootDER], rules: E2E.rules)
    }

    func parse(_ environment: JSONValue) throws(ConfigurationError) -> EngineConfiguration {
        try EngineConfiguration(
            json: ["bundleId": "com.example.app", "appAppleId": 1, "environment": environment, "rules": E2E.rules.canonicalJSON],
            baseDirectory: URL(fileURLWithPath: "/"))
    }

    @Test func environmentIsANameOrAListThatNeverMixesSignedAndUnsignedData() throws {
        #expect(try parse("Sandbox").environments == [.sandbox])
        #expect(try parse(["Production", "Sandbox"]).environments == [.production, .sandbox])
        #expect(try parse(["Xcode", "LocalTesting"]).environments == [.xcode, .localTesting])
        let bad: [(JSONValue, String, String)] = [
            (["Production", "Xcode"], "environment", "cannot be combined"),
            (["Sandbox", "LocalTesting"], "environment", "cannot be combined"),
            ([], "environment", "empty list"),
            (["Sandbox", "Sandbox"], "environment[1]", "listed twice"),
            (["Sandbox", "Staging"], "environment[1]", "is not one of"),
            (["Sandbox", 3], "environment[1]", "found"),
            (.null, "environment", "required"),
        ]
        for (value, field, words) in bad {
            do {
                _ = try parse(value)
                Issue.record("\(JSONWriter.string(value)) was accepted")
            } catch {
                #expect(error.field == field)
                #expect(error.message.contains(words), "\(error.message)")
            }
        }
        // Production anywhere in the list needs appAppleId.
        #expect(throws: ConfigurationError.self) {
            try EngineConfiguration(
                json: ["bundleId": "com.example.app", "environment": ["Sandbox", "Production"], "rules": E2E.rules.canonicalJSON],
                baseDirectory: URL(fileURLWithPath: "/"))
        }
    }

    @Test func aProductionServerTakesAppReviewsSandboxPurchaseAndEachViewSaysItsEnvironment() throws {
        let engine = try Engine(configuration: configuration([.production, .sandbox]), databasePath: E2E.folder().appendingPathComponent("p.sqlite").path)
        let production = TestPayloads.transaction(
            transactionId: "2000000000000601", originalTransactionId: "2000000000000601", appTransactionId: "704000000000000601",
            signedDate: t0, environment: "Production")
        let sandbox = TestPayloads.transaction(
            transactionId: "2000000000000602", originalTransactionId: "2000000000000602", appTransactionId: "704000000000000602",
            signedDate: t0, environment: "Sandbox")
        let xcode = TestPayloads.transaction(
            transactionId: "2000000000000603", originalTransactionId: "2000000000000603", appTransactionId: "704000000000000603",
            signedDate: t0, environment: "Xcode")
        let results = try engine.ingest([production, sandbox, xcode].map { InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign($0))) })
        #expect(results.map(\.outcome) == [.appended, .appended, .rejected])
        #expect(results[2].errorCode == "INVALID_ENVIRONMENT")
        #expect(results[2].errorMessage?.contains("Production, Sandbox") == true)
        for (id, environment) in [("704000000000000601", "Production"), ("704000000000000602", "Sandbox")] {
            guard case .customer(let view) = try engine.query(.appTransactionId(id), at: t0 + 1) else {
                Issue.record("\(id) not found")
                continue
            }
            #expect(view.environment == environment)
            #expect(view.json()["environment"] == .string(environment))
            #expect(view.entitlement("pro")?.active == true)
        }
        // The events record their environment, and a replay keeps it.
        _ = try engine.replay()
        #expect(try engine.state(of: "704000000000000602")?.environments == .sandbox)
        #expect(try engine.state(of: "704000000000000601")?.environments == .production)
    }

    @Test func aDatabaseBelongsToOneAppAndOneClassOfData() throws {
        let path = E2E.folder().appendingPathComponent("bound.sqlite").path
        let sandbox = try Engine(configuration: configuration([.sandbox]), databasePath: path)
        _ = try sandbox.ingest([
            InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(signedDate: t0))))
        ])
        // Adding Production to a Sandbox database is allowed.
        _ = try Engine(configuration: configuration([.sandbox, .production]), databasePath: path)
        _ = try Engine(configuration: configuration([.production]), databasePath: path)
        for (other, words) in [
            (configuration([.xcode]), ["signed data (Production/Sandbox)", "unsigned data (Xcode/LocalTesting)"]),
            (configuration([.sandbox], bundleId: "com.example.other"), ["com.example.app", "com.example.other"]),
        ] {
            do {
                _ = try Engine(configuration: other, databasePath: path)
                Issue.record("a mismatching configuration opened the database")
            } catch {
                #expect(error.code == "DATABASE_MISMATCH")
                for word in words { #expect(error.message.contains(word), "\(error.message)") }
            }
        }
        let store = try EventStore(path: path, hash: { _ in [] })
        #expect(try store.appBinding() == AppBinding(bundleId: TestPayloads.bundleId, dataClass: .signed, environments: ["Sandbox", "Production"]))
        #expect(try store.eventCount() == 1)
    }

    /// Switching from Sandbox to Production is allowed (section 2): what the database took
    /// under Sandbox is no tampering, and the audit re-verifies it under the environments
    /// the database has been configured with, not only today's.
    @Test func anAuditAfterTheEnvironmentNarrowedFindsNothingAltered() throws {
        let path = E2E.folder().appendingPathComponent("narrowed.sqlite").path
        let sandbox = try Engine(configuration: configuration([.sandbox]), databasePath: path)
        let results = try sandbox.ingest([
            InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(signedDate: t0))))
        ])
        #expect(results.map(\.outcome) == [.appended])
        #expect(try sandbox.audit().firstMismatch == nil)
        let production = try Engine(configuration: configuration([.production]), databasePath: path)
        let report = try production.audit()
        #expect(report.firstMismatch == nil, "\(String(describing: report.firstMismatch))")
        #expect(report.events == 1)
        // New data is still held to the configured environment.
        let late = TestPayloads.transaction(transactionId: "2000000000000611", originalTransactionId: "2000000000000611", signedDate: t0 + 1)
        let rejected = try production.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(late)))])
        #expect(rejected.first?.errorCode == "INVALID_ENVIRONMENT")
        // A read-only audit, which records nothing, reads the same record of environments.
        let readOnly = try Engine(configuration: configuration([.production]), databasePath: path, mode: .readOnly)
        #expect(try readOnly.audit().firstMismatch == nil)
        // Back to Sandbox without an appAppleId: Production, once configured, cannot be
        // checked and stays out, and the audit still runs.
        var sandboxOnly = configuration([.sandbox])
        sandboxOnly.appAppleId = nil
        #expect(try Engine(configuration: sandboxOnly, databasePath: path).audit().firstMismatch == nil)
        // With Production data in the log, that audit stops at it and says what it lacks.
        let signedInProduction = TestPayloads.transaction(
            transactionId: "2000000000000612", originalTransactionId: "2000000000000612", signedDate: t0 + 2, environment: "Production")
        let appended = try production.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(signedInProduction)))])
        #expect(appended.map(\.outcome) == [.appended], "\(appended.map { $0.errorMessage ?? "" })")
        let lacking = try Engine(configuration: sandboxOnly, databasePath: path).audit().firstMismatch
        #expect(lacking?.problem.contains("add the app's appAppleId to the configuration") == true, "\(String(describing: lacking))")
        #expect(try Engine(configuration: configuration([.sandbox]), databasePath: path).audit().firstMismatch == nil)
    }

    @Test func aDatabaseMadeByThePreviousSchemaIsBoundByItsFirstCommand() throws {
        let path = E2E.folder().appendingPathComponent("old.sqlite").path
        do {
            let connection = try Connection(path: path, mode: .readWrite)
            let old = SchemaMigrations.migrations.filter { $0.identifier < "005" }
            #expect(old.map(\.identifier) == ["001_events", "002_quarantine", "003_projections", "004_projections_next"])
            try Migrator.migrate(connection, migrations: old)
        }
        let engine = try Engine(configuration: configuration([.sandbox]), databasePath: path)
        _ = try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(signedDate: t0))))])
        let store = try EventStore(path: path, hash: { _ in [] })
        #expect(try store.appliedMigrations().contains("005_app_binding"))
        #expect(try store.appBinding()?.bundleId == TestPayloads.bundleId)
        #expect(throws: EngineError.self) { try Engine(configuration: configuration([.localTesting]), databasePath: path) }
    }

    @Test func theCommandLineRefusesAMismatchWithExitTwoBeforeTouchingAnything() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let db = folder.appendingPathComponent("cli.sqlite").path
        let line = TestPayloads.body(signedTransactionInfo: E2E.pki.sign(TestPayloads.transaction(signedDate: t0))) + "\n"
        #expect(try E2E.run(["ingest", "--db", db, "--config", config], stdin: line).status == 0)
        let xcodeFolder = E2E.folder()
        let xcode = try E2E.writeConfig(in: xcodeFolder, environment: "Xcode")
        let forged = JSONWriter.string(TestPayloads.transaction(transactionId: "2000000000000999", productId: "com.example.coins.100", type: "Consumable", expiresDate: nil, signedDate: t0, environment: "Xcode"))
        let unsigned = "eyJhbGciOiJub25lIn0." + Base64Encoding.url(forged) + ".\n"
        let run = try E2E.run(["ingest", "--db", db, "--config", xcode], stdin: unsigned)
        #expect(run.status == 2)
        #expect(run.stderr.contains("DATABASE_MISMATCH"))
        #expect(run.stderr.contains("signed data (Production/Sandbox)") && run.stderr.contains("unsigned data (Xcode/LocalTesting)"))
        #expect(run.stdout.isEmpty)
        let query = try E2E.run(["query", "--db", db, "--config", xcode, "--app-transaction-id", "704000000000000001"])
        #expect(query.status == 2)
        #expect(query.stderr.contains("DATABASE_MISMATCH"))
        let store = try EventStore(path: db, hash: { _ in [] })
        #expect(try store.eventCount() == 1)
    }
}
