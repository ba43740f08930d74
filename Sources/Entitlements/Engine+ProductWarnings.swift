import EntitlementCore
internal import EventStore
import Synchronization

/// Products met in data that `rules.products` does not name (specification section
/// 4): each is reported once per engine, since a typo there silently takes
/// access away.
final class ProductWarnings: Sendable {
    private struct Seen {
        var reported: Set<String> = []
        var pending: [String] = []
    }
    private let seen = Mutex(Seen())

    /// Notes the products of `productIds` that `rules` does not name.
    func note(_ productIds: some Sequence<String>, rules: Rules) {
        let unknown = productIds.filter { rules.products[$0] == nil }
        guard !unknown.isEmpty else { return }
        seen.withLock { seen in
            for productId in unknown where seen.reported.insert(productId).inserted { seen.pending.append(productId) }
        }
    }

    /// The products noted since the last call, each once per engine, in the order met.
    func take() -> [String] {
        seen.withLock { seen in
            defer { seen.pending.removeAll() }
            return seen.pending
        }
    }
}

extension Engine {
    /// The warnings to print for products met in data (ingested, or in an
    /// answer) that `rules.products` does not name, each product once per engine:
    /// `warning: product com.example.new is not in rules.products: it grants nothing`.
    public func takeProductWarnings() -> [String] {
        productWarnings.take().map { "warning: product \($0) is not in rules.products: it grants nothing" }
    }

    /// Notes the products that verified items carry.
    func noteProducts(_ items: [AppendItem]) {
        var products: [String] = []
        for item in items {
            guard case .verified(let input) = item else { continue }
            switch input {
            case .notification(let n):
                if let t = n.transaction { products.append(t.payload.productId) }
                if let p = n.renewalInfo?.payload.productId { products.append(p) }
            case .transaction(let t): products.append(t.payload.productId)
            case .renewalInfo(let r): if let p = r.payload.productId { products.append(p) }
            case .receipt(let r): products.append(contentsOf: r.entries.map(\.productId))
            case .appTransaction: break
            }
        }
        productWarnings.note(products, rules: configuration.rules)
    }

    /// Notes the products an answer shows.
    func noteProducts(_ view: CustomerView) {
        productWarnings.note(view.subscriptions.map(\.productId) + view.purchases.map(\.productId), rules: configuration.rules)
    }
}
