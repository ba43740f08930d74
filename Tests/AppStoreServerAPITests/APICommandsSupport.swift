import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI

/// Signed data and helpers of the support commands' tests (transaction-info, refund-history,
/// lookup-order, finish-transaction, extend, test-notification).
enum SupportScenario {
    static var pki: TestPKI { SyncScenario.pki }
    static let day: Int64 = 86_400_000
    static let now = Engine.now()
    static let appTransactionId = "704000000000077777"
    static let original = "2000000000077777"

    /// A purchase of `productId` by the scenario's customer, `days` ago.
    static func transaction(
        _ transactionId: String, productId: String = "com.example.lifetime", type: String = "Non-Consumable", daysAgo: Int64 = 3,
        revocationDate: Int64? = nil, original: String? = nil, environment: String = "Sandbox"
    ) -> JSONValue {
        TestPayloads.transaction(
            transactionId: transactionId, originalTransactionId: original ?? transactionId, appTransactionId: appTransactionId,
            productId: productId, type: type, purchaseDate: now - daysAgo * day,
            expiresDate: type == "Auto-Renewable Subscription" ? now + 27 * day : nil,
            signedDate: revocationDate.map { $0 + 1000 }, revocationDate: revocationDate,
            revocationType: revocationDate == nil ? nil : "REFUND_FULL", revocationReason: revocationDate == nil ? nil : 1,
            environment: environment)
    }

    static func signed(_ payload: JSONValue) -> String { pki.sign(payload) }

    static func lines(_ run: Tool.Run) -> [JSONValue] {
        run.stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) }
    }

    /// Sets `appStoreServerAPI.finishTransactions` in the fixture's configuration file.
    static func enableFinishes(_ fixture: SyncFixture) throws {
        let url = URL(fileURLWithPath: fixture.configPath)
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: url))),
            case .object(var api)? = config["appStoreServerAPI"]
        else { throw MockError("the fixture's configuration has no appStoreServerAPI object") }
        api["finishTransactions"] = true
        config["appStoreServerAPI"] = .object(api)
        try Data(JSONWriter.string(.object(config)).utf8).write(to: url)
    }

    /// The `transaction_finishes` row of `transactionId` in the database `name` of `fixture`.
    static func finish(_ transactionId: String, in fixture: SyncFixture, database name: String = "entitlements.sqlite") throws -> EventStore.TransactionFinish? {
        let store = try EventStore(path: fixture.folder.appendingPathComponent(name).path, hash: { $0 }, mode: .readOnly)
        return try store.transactionFinish(transactionId)
    }

    /// Waits (at most `timeout` seconds) until `condition` holds; whether it did.
    static func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !condition() {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        return true
    }
}
