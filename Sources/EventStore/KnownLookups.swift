/// The `customer_lookup` rows a connection knows are in the database: a customer's
/// every notification names the same originalTransactionId (and appAccountToken),
/// and the row it files under that name needs writing once, not with every event.
///
/// Rows of `customer_lookup` are never changed or deleted, so a row once committed
/// stays, whichever process wrote it. Rows written by a transaction that rolls back
/// are not: ``forgetUncommitted()`` drops them. One customer is remembered per name
/// and kind (a name filed under several customers is only written again, `INSERT OR
/// IGNORE`), and past ``capacity`` names the memory starts again.
final class KnownLookups {
    /// Customer by name, one table per kind of name.
    private var customers: [String: [String: String]] = [:]
    private var uncommitted: [(kind: String, value: String)] = []
    private var count = 0
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Whether the row (`kind`, `value`, `customer`) needs writing: `false` when it is
    /// known to be in the database; `true` (and it is remembered as written by the
    /// transaction under way) when it is not.
    func needsWriting(kind: String, value: String, customer: String) -> Bool {
        if customers[kind]?[value] == customer { return false }
        if count >= capacity {
            customers.removeAll()
            uncommitted.removeAll()
            count = 0
        }
        if customers[kind, default: [:]].updateValue(customer, forKey: value) == nil { count += 1 }
        uncommitted.append((kind, value))
        return true
    }

    /// The transaction that wrote rows committed: they stay.
    func committed() { uncommitted.removeAll() }

    /// The transaction rolled back: the rows it wrote are not in the database.
    func forgetUncommitted() {
        for (kind, value) in uncommitted where customers[kind]?.removeValue(forKey: value) != nil { count -= 1 }
        uncommitted.removeAll()
    }
}
