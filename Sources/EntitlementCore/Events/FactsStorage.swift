/// The shared, copy-on-write storage of a facts value.
///
/// The reducers keep, copy and compare thousands of facts values per customer;
/// held inline, a ``TransactionFacts`` is several hundred bytes and a dozen
/// references, so that every copy retains each of them. Held here, a copy
/// retains one reference, and the fields are copied only when a shared value
/// is changed.
final class FactsStorage<Fields: Sendable & Hashable>: @unchecked Sendable {
    // Mutated only through a uniquely referenced storage (``FactsStorage/unique(_:)``),
    // so no two threads ever see a change.
    var fields: Fields

    init(_ fields: Fields) { self.fields = fields }

    /// `storage` itself when nothing else refers to it, else a copy of it put in its place.
    @inline(__always)
    static func unique(_ storage: inout FactsStorage) -> FactsStorage {
        if !isKnownUniquelyReferenced(&storage) { storage = FactsStorage(storage.fields) }
        return storage
    }
}
