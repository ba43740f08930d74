extension AccountTokenClaim {
    /// Which of two claims stands (specification section 5): the later-signed; on an
    /// equal `signedDate`, the one with the greater raw JWS, as between two versions of
    /// one object (the raws are needed only when the tokens differ; the same token from
    /// two objects keeps the smaller ref).
    static func verdict(existing: AccountTokenClaim, incoming: AccountTokenClaim) -> VersionVerdict {
        if incoming.signedDate != existing.signedDate {
            return incoming.signedDate > existing.signedDate ? .takeIncoming : .keepExisting
        }
        if incoming.token == existing.token || incoming.ref == existing.ref {
            return incoming.ref < existing.ref ? .takeIncoming : .keepExisting
        }
        return VersionVerdict.byRaw(existing: (existing.ref, existing.raw), incoming: (incoming.ref, incoming.raw))
    }
}
