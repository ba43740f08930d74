import EntitlementCore
import Testing

/// ``TransactionFacts/evaluatedType(rules:)``, which looks a product's rule up only for a
/// receipt's one-time purchase, gives what ``TransactionFacts/evaluatedType(rule:)`` gives
/// with the rule looked up first, for every kind of transaction and rule.
@Suite("Evaluated type: the rule looked up only where it matters")
struct EvaluatedTypeTests {
    @Test func lookingTheRuleUpOnlyForReceiptsChangesNoType() {
        let rules = Rules(
            version: "v1",
            products: [
                "pass": ProductRule(entitlements: ["pro"], durationDays: 30),
                "coins": ProductRule(currency: "coins", units: 10),
                "plain": ProductRule(entitlements: ["pro"]),
            ])
        let types: [ProductType] = [.autoRenewable, .nonConsumable, .consumable, .nonRenewing, .unknown("LATER")]
        var compared = 0
        var receiptTypes: Set<String> = []
        for product in ["pass", "coins", "plain", "missing"] {
            for type in types {
                for digest in [nil, "ab12"] as [String?] {
                    for expires in [nil, 1_800_000_000_000] as [Int64?] {
                        let facts = TransactionFacts(
                            transactionId: "t", originalTransactionId: "t", productId: product, type: type,
                            purchaseDate: 1_700_000_000_000, expiresDate: expires, signedDate: 1_700_000_000_000,
                            receiptDigest: digest)
                        let expected = facts.evaluatedType(rule: rules.products[product])
                        #expect(facts.evaluatedType(rules: rules) == expected, "\(product) \(type) \(digest ?? "-") \(expires ?? 0)")
                        if digest != nil, expires == nil { receiptTypes.insert("\(expected)") }
                        compared += 1
                    }
                }
            }
        }
        #expect(compared == 80)
        // The rule matters for receipts: a pass and a consumable are told apart by it.
        #expect(receiptTypes.contains("nonRenewing") && receiptTypes.contains("consumable"))
    }
}
