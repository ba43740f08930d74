/// A rules file checked against the data: the products the data names that the
/// rules do not (each grants nothing), and the products the rules name that no
/// data does, each with the closest name on the other side when one is near
/// enough to be a typo.
///
/// A typo in `rules.products` silently grants nothing, so the two lists usually
/// show it twice: `com.example.pro.montly` configured and never seen, and
/// `com.example.pro.monthly` seen and not configured, each suggesting the other.
public struct RulesCheck: Sendable, Hashable {
    /// A product on one side of the check, and the closest name on the other side.
    public struct Finding: Sendable, Hashable {
        public var productId: String
        /// The nearest name on the other side (configured names for a product not in
        /// the rules; names in the data for a product never seen), when one is close.
        public var didYouMean: String?

        public init(productId: String, didYouMean: String?) {
            self.productId = productId
            self.didYouMean = didYouMean
        }
    }

    /// Products the data names that `rules.products` does not, sorted.
    public var notInRules: [Finding]
    /// Products `rules.products` names that no data does, sorted.
    public var notInData: [Finding]

    /// Checks `rules` against `productsSeen`, every product the data names.
    public init(rules: Rules, productsSeen: some Sequence<String>) {
        let seen = Set(productsSeen)
        let configured = Set(rules.products.keys)
        let unknown = seen.subtracting(configured).sorted()
        let unseen = configured.subtracting(seen).sorted()
        // A product not in the rules is compared with every configured name; a configured
        // product never seen with the names in the data that the rules lack.
        notInRules = unknown.map { Finding(productId: $0, didYouMean: Self.closest(to: $0, among: configured)) }
        notInData = unseen.map { Finding(productId: $0, didYouMean: Self.closest(to: $0, among: unknown)) }
    }

    /// The name in `candidates` nearest to `name` by edit distance, when it is near
    /// enough to be a typo: at most 2 edits, or a tenth of the longer name (case
    /// differences count as one edit each); among equals the smallest name.
    public static func closest(to name: String, among candidates: some Sequence<String>) -> String? {
        var best: (name: String, distance: Int)? = nil
        for candidate in candidates where candidate != name {
            let limit = max(2, max(name.utf8.count, candidate.utf8.count) / 10)
            let distance = editDistance(name, candidate, limit: limit)
            guard distance <= limit else { continue }
            if let current = best, current.distance < distance || (current.distance == distance && current.name.utf8Precedes(candidate)) {
                continue
            }
            best = (candidate, distance)
        }
        return best?.name
    }

    /// Levenshtein distance over Unicode scalars (insert, delete, substitute: 1 each);
    /// any value above `limit` is reported as `limit + 1`.
    public static func editDistance(_ a: String, _ b: String, limit: Int = .max) -> Int {
        let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
        let beyond = limit < Int.max ? limit + 1 : Int.max
        if abs(a.count - b.count) > limit { return beyond }
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = current[0]
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
                rowMinimum = min(rowMinimum, current[j])
            }
            if rowMinimum > limit { return beyond }
            swap(&previous, &current)
        }
        return min(previous[b.count], beyond)
    }
}
