extension CustomerState {
    /// Folds a usage record into the state: kept by its `usageId`.
    ///
    /// The store never logs two records with one id and different content
    /// (`USAGE_CONFLICT`), but the state must not depend on arrival even then:
    /// of two such records the one that ``UsageFacts/precedes(_:)`` the other is
    /// dropped, so any order and any duplicates give an equal state.
    mutating func apply(usage: UsageFacts) {
        if let existing = usages[usage.usageId], !existing.precedes(usage) { return }
        usages[usage.usageId] = usage
    }
}
