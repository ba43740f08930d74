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

extension CustomerState {
    /// Folds an operator record into the state: kept by its ``OperatorRecord/identity``,
    /// as ``apply(usage:)`` keeps usage records (of two with one identity, the one
    /// that ``OperatorRecord/precedes(_:)`` the other is dropped).
    mutating func apply(operatorRecord record: OperatorRecord) {
        if let existing = operatorRecords[record.identity], !existing.precedes(record) { return }
        operatorRecords[record.identity] = record
    }
}
