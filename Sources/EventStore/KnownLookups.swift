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
    /// The kinds of name `customer_lookup` files customers under.
    enum Kind: Int, CaseIterable {
        case originalTransactionId, appAccountToken
    }

    /// Customer by name, one table per kind of name (indexed by ``Kind``'s raw value).
    private var customers = [[String: String]](repeating: [:], count: Kind.allCases.count)
    private var uncommitted: [(kind: Kind, value: String)] = []
    private var count = 0
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Whether the row (`kind`, `value`, `customer`) needs writing: `false` when it is
    /// known to be in the database; `true` (and it is remembered as written by the
    /// transaction under way) when it is not.
    func needsWriting(_ kind: Kind, value: String, customer: String) -> Bool {
        if customers[kind.rawValue][value] == customer { return false }
        if count >= capacity {
            for index in customers.indices { customers[index].removeAll() }
            uncommitted.removeAll()
            count = 0
        }
        if customers[kind.rawValue].updateValue(customer, forKey: value) == nil { count += 1 }
        uncommitted.append((kind, value))
        return true
    }

    /// The transaction that wrote rows committed: they stay.
    func committed() { uncommitted.removeAll() }

    /// The transaction rolled back: the rows it wrote are not in the database.
    func forgetUncommitted() {
        for (kind, value) in uncommitted where customers[kind.rawValue].removeValue(forKey: value) != nil { count -= 1 }
        uncommitted.removeAll()
    }
}
