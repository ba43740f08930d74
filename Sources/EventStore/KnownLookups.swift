/// The `customer_lookup` rows a connection knows are in the database: a customer's
/// every notification names the same originalTransactionId, and the row it files
/// under that name needs writing once, not with every event.
///
/// Rows of `customer_lookup` are never changed or deleted, so a row once committed
/// stays, whichever process wrote it. Rows written by a transaction that rolls back
/// are not: ``forgetUncommitted()`` drops them. Bounded: past ``capacity`` rows the
/// set starts again (a forgotten row is only written again, `INSERT OR IGNORE`).
final class KnownLookups {
    private var rows: Set<String> = []
    private var uncommitted: [String] = []
    let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    /// Whether the row (`kind`, `value`, `customer`) needs writing: `false` when it is
    /// known to be in the database; `true` (and it is remembered as written by the
    /// transaction under way) when it is not.
    func needsWriting(kind: String, value: String, customer: String) -> Bool {
        let row = kind + "\u{0}" + value + "\u{0}" + customer
        if rows.contains(row) { return false }
        if rows.count >= capacity {
            rows.removeAll()
            uncommitted.removeAll()
        }
        rows.insert(row)
        uncommitted.append(row)
        return true
    }

    /// The transaction that wrote rows committed: they stay.
    func committed() { uncommitted.removeAll() }

    /// The transaction rolled back: the rows it wrote are not in the database.
    func forgetUncommitted() {
        for row in uncommitted { rows.remove(row) }
        uncommitted.removeAll()
    }
}

