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
        // Each item matched down to the payload read, in place: no copy of a whole input
        // (which retains each string of a notification and its nested payloads).
        for index in items.indices {
            switch items[index] {
            case .rejected: continue
            case .verified(.notification(let n)):
                if let t = n.transaction { add(t.payload) }
                if let p = n.renewalInfo?.payload.productId, n.renewalInfo?.payload.advancedCommerceInfo == nil,
                    n.transaction?.payload.advancedCommerceInfo == nil
                {
                    add(product: p)
                }
            case .verified(.transaction(let t)): add(t.payload)
            case .verified(.renewalInfo(let r)):
                if let p = r.payload.productId, r.payload.advancedCommerceInfo == nil { add(product: p) }
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
    private mutating func add(_ t: TransactionPayload) {
        guard let items = t.advancedCommerceInfo?.items else {
            add(product: t.productId)
            return
        }
        for item in items { commerceItems.append(CommerceItem(sku: item.sku, transactionId: t.transactionId)) }
    }
}
