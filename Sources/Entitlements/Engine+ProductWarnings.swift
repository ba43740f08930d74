import EntitlementCore
internal import EventStore
import Synchronization

/// Products met in data that `rules.products` does not name (specification section
/// 4): each is reported once per engine, since a typo there silently takes
/// access away.
final class ProductWarnings: Sendable {
    private struct Seen {
        var reported: Set<String> = []
        var pending: [RulesCheck.Finding] = []
    }
    private let seen = Mutex(Seen())

    /// Notes the products of `productIds` that `rules` does not name, each with the
    /// closest configured name when one is near enough to be a typo.
    func note(_ productIds: some Sequence<String>, rules: Rules) {
        let unknown = productIds.filter { rules.products[$0] == nil }
        guard !unknown.isEmpty else { return }
        let fresh = seen.withLock { seen in unknown.filter { !seen.reported.contains($0) } }
        guard !fresh.isEmpty else { return }
        let findings = fresh.map { RulesCheck.Finding(productId: $0, didYouMean: RulesCheck.closest(to: $0, among: rules.products.keys)) }
        seen.withLock { seen in
            for finding in findings where seen.reported.insert(finding.productId).inserted { seen.pending.append(finding) }
        }
    }

    /// The products noted since the last call, each once per engine, in the order met.
    func take() -> [RulesCheck.Finding] {
        seen.withLock { seen in
            defer { seen.pending.removeAll() }
            return seen.pending
        }
    }
}

extension Engine {
    /// The warnings to print for products met in data (ingested, or in an
    /// answer) that `rules.products` does not name, each product once per engine:
    /// `warning: product com.example.new is not in rules.products: it grants nothing`,
    /// followed by ` (did you mean com.example.news?)` when a configured name is
    /// near enough to be a typo (``RulesCheck/closest(to:among:)``).
    public func takeProductWarnings() -> [String] {
        productWarnings.take().map(Self.warning(notInRules:))
    }

    /// The warning for a product the data names and the rules do not.
    public static func warning(notInRules finding: RulesCheck.Finding) -> String {
        let suggestion = finding.didYouMean.map { " (did you mean \($0)?)" } ?? ""
        return "warning: product \(finding.productId) is not in rules.products: it grants nothing" + suggestion
    }

    /// The line for a product the rules name and no ingested data does: a warning
    /// when a product of the data is near enough to be what was meant, else a note
    /// (a product nobody has bought yet is no error).
    public static func warning(notInData finding: RulesCheck.Finding) -> String {
        if let seen = finding.didYouMean {
            return "warning: product \(finding.productId) is in rules.products but in no ingested data (did you mean \(seen)?)"
        }
        return "note: product \(finding.productId) is in rules.products but in no ingested data yet"
    }

    /// Notes the products that verified items carry.
    func noteProducts(_ items: [AppendItem], rules: Rules) {
        var products: [String] = []
        for item in items {
            guard case .verified(let input) = item else { continue }
            switch input {
            case .notification(let n):
                if let t = n.transaction { products.append(t.payload.productId) }
                if let p = n.renewalInfo?.payload.productId { products.append(p) }
            case .transaction(let t): products.append(t.payload.productId)
            case .renewalInfo(let r): if let p = r.payload.productId { products.append(p) }
            case .appTransaction: break
            }
        }
        productWarnings.note(products, rules: rules)
    }

    /// Notes the products an answer shows.
    func noteProducts(_ view: CustomerView, rules: Rules) {
        productWarnings.note(view.subscriptions.map(\.productId) + view.purchases.map(\.productId), rules: rules)
    }
}
