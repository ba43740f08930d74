extension CustomerState {
    /// Inserts into `products` each product this state's signed data names (its
    /// transactions' `productId`, its renewal infos' `productId`) that
    /// `rules.products` lacks: such a product grants nothing (specification section 4),
    /// and a rules change that drops one by mistake silently takes access away.
    public func insertProducts(notIn rules: Rules, into products: inout Set<String>) {
        // Most of a customer's data names one or two products: each is looked up once in a row.
        var last: String? = nil
        func consider(_ productId: String) {
            guard productId != last else { return }
            last = productId
            if rules.products[productId] == nil { products.insert(productId) }
        }
        for signed in transactions.values { consider(signed.facts.productId) }
        for versions in renewalInfos.values {
            for version in versions { if let productId = version.facts.productId { consider(productId) } }
        }
    }

    /// Inserts into `products` each product this state's signed data names (its
    /// transactions' `productId`, its renewal infos' `productId`), whether the rules
    /// name it or not: what a rules file is checked against (``RulesCheck``).
    public func insertProducts(into products: inout Set<String>) {
        var last: String? = nil
        func consider(_ productId: String) {
            guard productId != last else { return }
            last = productId
            products.insert(productId)
        }
        for signed in transactions.values { consider(signed.facts.productId) }
        for versions in renewalInfos.values {
            for version in versions { if let productId = version.facts.productId { consider(productId) } }
        }
    }
}
