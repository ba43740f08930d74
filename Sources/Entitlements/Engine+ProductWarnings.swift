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
        /// Other warnings about what data grants (Advanced Commerce SKUs), each once.
        var reportedMessages: Set<String> = []
        var pendingMessages: [String] = []
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

    /// Notes whole warning lines, each to be reported once per engine.
    func note(messages: some Sequence<String>) {
        seen.withLock { seen in
            for message in messages where seen.reportedMessages.insert(message).inserted { seen.pendingMessages.append(message) }
        }
    }

    /// The products noted since the last call, each once per engine, in the order met.
    func take() -> [RulesCheck.Finding] {
        seen.withLock { seen in
            defer { seen.pending.removeAll() }
            return seen.pending
        }
    }

    /// The warning lines noted since the last call.
    func takeMessages() -> [String] {
        seen.withLock { seen in
            defer { seen.pendingMessages.removeAll() }
            return seen.pendingMessages
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
        productWarnings.take().map(Self.warning(notInRules:)) + productWarnings.takeMessages()
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

    /// Notes the products and Advanced Commerce SKUs a batch named, gathered where it
    /// was verified.
    func noteProducts(_ named: NamedProducts, rules: Rules) {
        productWarnings.note(named.productIds, rules: rules)
        var messages: [String] = []
        for item in named.commerceItems {
            if let sku = item.sku {
                if rules.skus[sku] == nil { messages.append("warning: SKU \(sku) is not in rules.skus: it grants nothing") }
            } else {
                messages.append("warning: transaction \(item.transactionId) has an Advanced Commerce item without a SKU: it grants nothing")
            }
        }
        if !messages.isEmpty { productWarnings.note(messages: messages) }
    }

    /// Notes the products of a customer's transactions bought by `until`, the ones a
    /// timeline meets (an Advanced Commerce purchase grants through its SKUs: its
    /// product may grant nothing).
    func noteProducts(_ state: CustomerState, until: Int64, rules: Rules) {
        let products = state.transactions.values.lazy.map(\.facts)
            .filter { $0.purchaseDate <= until && $0.extensions?.items == nil }
            .map(\.productId)
        productWarnings.note(products, rules: rules)
    }

    /// Notes the products an answer shows.
    func noteProducts(_ view: CustomerView, rules: Rules) {
        // An Advanced Commerce purchase grants through its SKUs: its product may grant nothing
        // (as the ingest and the history judge it).
        // Fields read in place: a filtered array (or a lazy filter's iterator) copies every view it passes.
        var products: [String] = []
        let subscriptions = view.subscriptions, purchases = view.purchases
        for index in subscriptions.indices where subscriptions[index].advancedCommerceItems == nil {
            products.append(subscriptions[index].productId)
        }
        for index in purchases.indices where purchases[index].advancedCommerceItems == nil { products.append(purchases[index].productId) }
        productWarnings.note(products, rules: rules)
    }
}
