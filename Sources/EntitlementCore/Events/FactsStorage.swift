/// The shared, immutable storage of a facts value.
///
/// The reducers keep, copy and compare thousands of facts values per customer;
/// held inline, a ``TransactionFacts`` is several hundred bytes and a dozen
/// references, so that every copy retains each of them. Held here, a copy
/// retains one reference. Changing a field (rare: the codec's older formats,
/// tests) makes new storage; the fields are never changed in place, so reading
/// them needs no exclusivity check.
final class FactsStorage<Fields: Sendable & Hashable>: Sendable {
    let fields: Fields

    init(_ fields: Fields) { self.fields = fields }

    /// New storage: these fields, changed by `change`.
    @inline(__always)
    func changed(_ change: (inout Fields) -> Void) -> FactsStorage {
        var copy = fields
        change(&copy)
        return FactsStorage(copy)
    }
}
