import EntitlementCore
import EventStore
import Foundation
import TestSupport

/// Unsigned verified inputs for store tests: the store trusts what it is handed,
/// so these exercise storage without the verifier.
enum StoreFixtures {
    static func temporaryDatabase() -> String {
        Scenario.temporaryFolder("store-tests").appendingPathComponent("test.sqlite").path
    }

    /// A stand-in for SHA-256 (the store takes the hash function from its caller).
    static let hash: EventStore.HashFunction = { bytes in
        var h1: UInt64 = 0xcbf2_9ce4_8422_2325
        var h2: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in bytes {
            h1 = (h1 ^ UInt64(byte)) &* 0x100_0000_01b3
            h2 = (h2 &+ UInt64(byte)) &* 0x9E37_79B9_7F4A_7C15
        }
        return withUnsafeBytes(of: (h1, h2, h1 ^ h2, h2 &+ h1)) { Array($0) }
    }

    static let rules = Rules(version: "test-1", products: ["pro.monthly": ProductRule(entitlements: ["pro"])])

    static func transaction(
        id: String, original: String = "1000", app: String? = "app-1", product: String = "pro.monthly",
        purchase: Int64 = 1_700_000_000_000, expires: Int64? = 1_702_592_000_000, signed: Int64 = 1_700_000_000_500,
        revocation: Int64? = nil, token: String? = nil, previous: String? = nil
    ) -> VerifiedInput {
        var object: JSONObject = JSONObject()
        object["transactionId"] = .string(id)
        object["originalTransactionId"] = .string(original)
        if let app { object["appTransactionId"] = .string(app) }
        object["bundleId"] = "com.example.app"
        object["productId"] = .string(product)
        object["purchaseDate"] = .int(purchase)
        if let expires { object["expiresDate"] = .int(expires) }
        object["quantity"] = 1
        object["type"] = "Auto-Renewable Subscription"
        object["signedDate"] = .int(signed)
        object["environment"] = "Sandbox"
        object["inAppOwnershipType"] = "PURCHASED"
        if let revocation {
            object["revocationDate"] = .int(revocation)
            object["revocationReason"] = 0
            object["revocationType"] = "REFUND_FULL"
        }
        if let token { object["appAccountToken"] = .string(token) }
        if let previous { object["previousOriginalTransactionId"] = .string(previous) }
        let json = JSONValue.object(object)
        let payload = try! TransactionPayload(json: json)
        return .transaction(SignedTransaction(jws: "header." + JSONWriter.string(json) + ".sig-\(id)-\(signed)", payload: payload))
    }

    static func notification(uuid: String, transaction: VerifiedInput, type: String = "DID_RENEW", signed: Int64 = 1_700_000_001_000)
        -> VerifiedInput
    {
        guard case .transaction(let t) = transaction else { fatalError() }
        let json: JSONValue = [
            "notificationType": .string(type), "notificationUUID": .string(uuid), "signedDate": .int(signed), "version": "2.0",
            "data": ["environment": "Sandbox", "bundleId": "com.example.app", "signedTransactionInfo": .string(t.jws)],
        ]
        return .notification(
            SignedNotification(jws: "nheader." + JSONWriter.string(json) + ".nsig", payload: try! NotificationPayload(json: json), transaction: t))
    }
}
