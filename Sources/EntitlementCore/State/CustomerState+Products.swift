extension CustomerState {
    /// Inserts into `products` each product this state's signed data names (its
    /// transactions' `productId`, its renewal infos' `productId`), whether the rules
    /// name it or not: what a rules file is checked against (``RulesCheck``).
    public func insertProducts(into products: inout Set<String>) {
        // Most of a customer's data names one or two products: each is inserted once in a row.
        var last: String? = nil
        func consider(_ productId: String) {
            guard productId != last else { return }
            last = productId
            products.insert(productId)
        }
        // An Advanced Commerce purchase grants through its SKUs: its product may grant
        // nothing, nor the renewal infos of its subscription.
        var commerce = Set<String>()
        for signed in transactions.values {
            if signed.facts.extensions?.items == nil {
                consider(signed.facts.productId)
            } else {
                commerce.insert(signed.facts.originalTransactionId)
            }
        }
        for (originalTransactionId, versions) in renewalInfos where !commerce.contains(originalTransactionId) {
            for version in versions { if let productId = version.facts.productId { consider(productId) } }
        }
    }
}
