import EntitlementCore

/// The products and Advanced Commerce items that verified items name, each product
/// once, in the order met: what the product warnings check against the rules.
///
/// Gathered from a batch on the thread that verified it (``Engine/VerifiedBatch``),
/// so that the appending thread checks a few names instead of reading every input.
struct NamedProducts: Sendable {
    /// An Advanced Commerce item: it grants through its SKU (`rules.skus`), and an item
    /// without one grants nothing.
    struct CommerceItem: Sendable {
        var sku: String?
        var transactionId: String
    }

    /// Products named outside Advanced Commerce, each once.
    private(set) var productIds: [String] = []
    /// Advanced Commerce items, in the order met.
    private(set) var commerceItems: [CommerceItem] = []
    private var seen: Set<String> = []

    init(_ items: [AppendItem]) {
        // Each item matched down to the fields read, in place: no copy of a payload
        // (which retains each of its strings).
        for index in items.indices {
            switch items[index] {
            case .rejected: continue
            case .verified(.notification(let n)):
                if let t = n.transaction { add(t) }
                if let r = n.renewalInfo, n.transaction?.payload.advancedCommerceInfo == nil { add(r) }
            case .verified(.transaction(let t)): add(t)
            case .verified(.renewalInfo(let r)): add(r)
            case .verified(.receipt(let r)): for entry in r.entries { add(product: entry.productId) }
            case .verified(.appTransaction): break
            }
        }
    }

    private mutating func add(product: String) {
        if seen.insert(product).inserted { productIds.append(product) }
    }

    /// A transaction's product, or its Advanced Commerce items (an Advanced Commerce
    /// purchase grants through its SKUs: its product may grant nothing).
    private mutating func add(_ t: SignedTransaction) {
        guard let items = t.payload.advancedCommerceInfo?.items else {
            add(product: t.payload.productId)
            return
        }
        for item in items { commerceItems.append(CommerceItem(sku: item.sku, transactionId: t.payload.transactionId)) }
    }

    /// A renewal info's product, unless it renews through Advanced Commerce.
    private mutating func add(_ r: SignedRenewalInfo) {
        if let product = r.payload.productId, r.payload.advancedCommerceInfo == nil { add(product: product) }
    }
}
