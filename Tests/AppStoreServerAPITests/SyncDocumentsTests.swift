import EntitlementCore
@testable import Entitlements
import Testing

/// How an answer of the API becomes input documents: item by item, so that no item
/// depends on the size limit of a whole page.
@Suite struct SyncDocumentsTests {
    func texts(_ json: JSONValue) -> [String] { AppStoreSync.documents(of: json).map { String(decoding: $0.bytes, as: UTF8.self) } }

    @Test func historyPagesAndStatusesAreSplitIntoItems() {
        #expect(texts(["revision": "r", "hasMore": false, "signedTransactions": ["a.b.c", "d.e.f"]]) == [
            #"{"signedTransactionInfo":"a.b.c"}"#, #"{"signedTransactionInfo":"d.e.f"}"#,
        ])
        #expect(texts(["signedTransactions": []]).isEmpty)
        #expect(texts(["signedTransactions": [1]]) == ["1"], "a non-string item is handed on as is, to be quarantined")
        let statuses: JSONValue = [
            "data": [
                ["lastTransactions": [["status": 1, "signedTransactionInfo": "t1", "signedRenewalInfo": "r1"], ["signedRenewalInfo": "r2"]]],
                ["lastTransactions": [["signedTransactionInfo": "t3"]]],
            ]
        ]
        #expect(texts(statuses) == [
            #"{"signedTransactionInfo":"t1","signedRenewalInfo":"r1"}"#, #"{"signedRenewalInfo":"r2"}"#, #"{"signedTransactionInfo":"t3"}"#,
        ])
        #expect(texts(["data": [["lastTransactions": [["status": 1]]]]]) == [#"{"data":[{"lastTransactions":[{"status":1}]}]}"#])
        #expect(texts(["signedAppTransactionInfo": "x.y.z"]) == [#"{"signedAppTransactionInfo":"x.y.z"}"#])
    }
}
