/// An operator's grant and what ended it early (specification section 13), as
/// evaluation, history and the lifecycle feed read it.
public struct OperatorGrant: Sendable, Hashable {
    /// The grant's id.
    public var id: String
    public var entitlement: String
    /// When it starts (inclusive), in ms since 1970.
    public var from: Int64
    /// When it ends by itself (exclusive).
    public var until: Int64
    /// When a revocation ends it, if one was recorded.
    public var revokedAt: Int64?
    /// The grant record itself (who, why, when).
    public var record: OperatorRecord

    /// When it stops granting: `until`, or the revocation when that comes first.
    public var end: Int64 { min(until, revokedAt ?? until) }

    /// Whether it grants at `at`: from `from` up to `until`, unless revoked at or before `at`.
    public func isActive(at: Int64) -> Bool {
        from <= at && at < end
    }

    /// The grants among `records`, each with its revocation, ordered by id.
    public static func grants(in records: some Sequence<OperatorRecord>) -> [OperatorGrant] {
        var grants: [String: OperatorGrant] = [:]
        var revocations: [String: Int64] = [:]
        for record in records {
            switch record.action {
            case .grant(let entitlement, let from, let until):
                grants[record.id] = OperatorGrant(
                    id: record.id, entitlement: entitlement, from: from, until: until, revokedAt: nil, record: record)
            case .grantRevoked(let at):
                revocations[record.id] = at
            case .credit, .link:
                break
            }
        }
        for (id, at) in revocations { grants[id]?.revokedAt = at }
        return grants.values.sorted { $0.id.utf8Precedes($1.id) }
    }
}

extension CustomerState {
    /// The operator's grants kept in this state.
    public var operatorGrants: [OperatorGrant] { OperatorGrant.grants(in: operatorRecords.values) }

    /// The app user this customer is linked to by the operator's links: the
    /// latest-recorded link (then the greater link id), or `nil`.
    public var linkedAppUser: OperatorRecord? {
        links.last
    }

    /// The operator's links of this customer, in order of recording (then link id).
    public var links: [OperatorRecord] {
        operatorRecords.values.filter { $0.kind == .link }.sorted {
            $0.recordedAt != $1.recordedAt ? $0.recordedAt < $1.recordedAt : $0.id.utf8Precedes($1.id)
        }
    }
}
