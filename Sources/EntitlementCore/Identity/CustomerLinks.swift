/// A signed object's word that `originalTransactionId` X belongs to the
/// customer `appTransactionId` A (specification section 5): every signed object that
/// carries both makes one.
///
/// When objects link X to different appTransactionIds, the greatest claim
/// decides: the later `signedDate`, then the greater raw JWS (the raw of the
/// object that carries the `appTransactionId`). Being a maximum, the winner
/// does not depend on the order claims arrive in.
public struct LinkClaim: Sendable, Hashable {
    public var originalTransactionId: String
    public var appTransactionId: String
    public var signedDate: Int64
    /// Where the raw JWS of the claiming object is.
    public var ref: RawRef
    /// That raw, when at hand (at ingest); needed only to break a tie on `signedDate`.
    public var raw: String?

    public init(originalTransactionId: String, appTransactionId: String, signedDate: Int64, ref: RawRef, raw: String? = nil) {
        self.originalTransactionId = originalTransactionId
        self.appTransactionId = appTransactionId
        self.signedDate = signedDate
        self.ref = ref
        self.raw = raw
    }

    /// Equality of what the claim says (not where it is): two copies of one
    /// object make one claim.
    public static func == (lhs: LinkClaim, rhs: LinkClaim) -> Bool {
        lhs.originalTransactionId == rhs.originalTransactionId && lhs.appTransactionId == rhs.appTransactionId
            && lhs.signedDate == rhs.signedDate
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(originalTransactionId)
        hasher.combine(appTransactionId)
        hasher.combine(signedDate)
    }

    /// Which of two claims on one `originalTransactionId` wins.
    public enum Verdict: Sendable, Hashable {
        case keepExisting
        case takeIncoming
        /// Same `signedDate` under different refs: the raws named here decide.
        case needsRaws(Set<RawRef>)
    }

    /// Whether this is a migration's claim: an object of a migrated subscription
    /// that carries `previousOriginalTransactionId` P and no `appTransactionId`
    /// puts X with the customer of P, and names `otid:<P>` here.
    public var isMigration: Bool { appTransactionId.hasPrefix("otid:") }

    /// Orders `incoming` against `existing`: a link to an appTransactionId over a
    /// migration's claim, then the later `signedDate`, then the greater raw JWS
    /// (UTF-8 bytes), then the smaller ref (the copy logged first).
    public static func verdict(existing: LinkClaim, incoming: LinkClaim) -> Verdict {
        if incoming.isMigration != existing.isMigration {
            return incoming.isMigration ? .keepExisting : .takeIncoming
        }
        if incoming.signedDate != existing.signedDate {
            return incoming.signedDate > existing.signedDate ? .takeIncoming : .keepExisting
        }
        if incoming.ref == existing.ref { return .keepExisting }
        switch VersionVerdict.byRaw(existing: (existing.ref, existing.raw), incoming: (incoming.ref, incoming.raw)) {
        case .keepExisting: return .keepExisting
        case .takeIncoming: return .takeIncoming
        case .needsRaws(let refs): return .needsRaws(refs)
        }
    }
}

extension Event {
    /// The links the event's signed objects make: each transaction or renewal
    /// info carrying both ids, and a notification whose `data.appTransactionId`
    /// comes with the originalTransactionId of what it carries. An object of a
    /// migrated subscription that carries `previousOriginalTransactionId` P and
    /// `appTransactionId` A also links P to A: the subscription it came from
    /// belongs to the same customer. Such an object without an appTransactionId
    /// claims its own X for the customer of P (`otid:<P>`, ``LinkClaim/isMigration``).
    public var linkClaims: [LinkClaim] {
        var claims = directLinkClaims
        for claim in claims {
            guard let previous = previousOriginalTransactionId(of: claim.ref), previous != claim.originalTransactionId else { continue }
            var migrated = claim
            migrated.originalTransactionId = previous
            claims.append(migrated)
        }
        claims += migrationClaims
        return claims
    }

    /// The claims of this event's transactions and renewal infos that carry a
    /// `previousOriginalTransactionId` and no `appTransactionId`.
    private var migrationClaims: [LinkClaim] {
        func claim(_ facts: TransactionFacts, ref: RawRef, raw: String?) -> LinkClaim? {
            migrationClaim(
                otid: facts.originalTransactionId, app: facts.appTransactionId,
                previous: facts.extensions?.previousOriginalTransactionId, signedDate: facts.signedDate, ref: ref, raw: raw)
        }
        func claim(_ facts: RenewalFacts, ref: RawRef, raw: String?) -> LinkClaim? {
            migrationClaim(
                otid: facts.originalTransactionId, app: facts.appTransactionId,
                previous: facts.extensions?.previousOriginalTransactionId, signedDate: facts.signedDate, ref: ref, raw: raw)
        }
        switch body {
        case .notification(let n):
            // Most notifications make none: nothing is allocated for them.
            var claims: [LinkClaim] = []
            if let t = n.transaction, let made = claim(t.facts, ref: t.ref, raw: t.raw) { claims.append(made) }
            if let r = n.renewalInfo, let made = claim(r.facts, ref: r.ref, raw: r.raw) { claims.append(made) }
            return claims
        case .transaction(let t): return claim(t.facts, ref: t.ref, raw: t.raw).map { [$0] } ?? []
        case .renewalInfo(let r): return claim(r.facts, ref: r.ref, raw: r.raw).map { [$0] } ?? []
        case .appTransaction, .receipt, .usage, .operatorAction: return []
        }
    }

    private func migrationClaim(otid: String, app: String?, previous: String?, signedDate: Int64, ref: RawRef, raw: String?) -> LinkClaim? {
        guard app == nil, let previous, !previous.isEmpty, previous != otid else { return nil }
        return LinkClaim(originalTransactionId: otid, appTransactionId: "otid:" + previous, signedDate: signedDate, ref: ref, raw: raw)
    }

    /// The `previousOriginalTransactionId` of the signed object at `ref` in this event.
    private func previousOriginalTransactionId(of ref: RawRef) -> String? {
        switch body {
        case .notification(let n):
            switch ref.slot {
            case .nestedTransaction: return n.transaction?.facts.extensions?.previousOriginalTransactionId
            case .nestedRenewalInfo: return n.renewalInfo?.facts.extensions?.previousOriginalTransactionId
            case .own, .nestedAppTransaction: return nil
            }
        case .transaction(let t): return t.facts.extensions?.previousOriginalTransactionId
        case .renewalInfo(let r): return r.facts.extensions?.previousOriginalTransactionId
        case .appTransaction, .receipt, .usage, .operatorAction: return nil
        }
    }

    private var directLinkClaims: [LinkClaim] {
        switch body {
        case .notification(let n):
            var claims: [LinkClaim] = []
            if let t = n.transaction, let app = t.facts.appTransactionId {
                claims.append(
                    LinkClaim(
                        originalTransactionId: t.facts.originalTransactionId, appTransactionId: app, signedDate: t.facts.signedDate,
                        ref: t.ref, raw: t.raw))
            }
            if let r = n.renewalInfo, let app = r.facts.appTransactionId {
                claims.append(
                    LinkClaim(
                        originalTransactionId: r.facts.originalTransactionId, appTransactionId: app, signedDate: r.facts.signedDate,
                        ref: r.ref, raw: r.raw))
            }
            if let app = n.appTransactionId, let otid = originalTransactionId {
                claims.append(
                    LinkClaim(
                        originalTransactionId: otid, appTransactionId: app, signedDate: n.signedDate,
                        ref: RawRef(eventSeq: seq, slot: .own)))  // the notification's raw is loaded on a tie
            }
            return claims
        case .transaction(let t):
            guard let app = t.facts.appTransactionId else { return [] }
            return [
                LinkClaim(
                    originalTransactionId: t.facts.originalTransactionId, appTransactionId: app, signedDate: t.facts.signedDate,
                    ref: t.ref, raw: t.raw)
            ]
        case .renewalInfo(let r):
            guard let app = r.facts.appTransactionId else { return [] }
            return [
                LinkClaim(
                    originalTransactionId: r.facts.originalTransactionId, appTransactionId: app, signedDate: r.facts.signedDate,
                    ref: r.ref, raw: r.raw)
            ]
        case .appTransaction, .receipt, .usage, .operatorAction:
            // A receipt is unsigned by an app transaction; a usage or operator record is the operator's word: it links nothing.
            return []
        }
    }
}

/// Who the customer is (specification section 5), as a pure function of the set of
/// events: the winning link of every originalTransactionId, and the customers
/// the customers the events then form.
public struct CustomerLinks: Sendable, Hashable {
    /// The winning claim of each linked originalTransactionId.
    public private(set) var winners: [String: LinkClaim] = [:]

    public init() {}

    /// The links of `events` (any order, any duplicates).
    /// - Throws: ``MissingRawJWS`` when two claims tie on `signedDate` and a raw is not at hand.
    public init(_ events: some Sequence<Event>) throws(MissingRawJWS) {
        for event in events {
            for claim in event.linkClaims { try add(claim) }
        }
    }

    /// Takes `claim` when it beats the standing one.
    /// - Returns: whether the appTransactionId that X is linked to changed.
    @discardableResult
    public mutating func add(_ claim: LinkClaim) throws(MissingRawJWS) -> Bool {
        guard let existing = winners[claim.originalTransactionId] else {
            winners[claim.originalTransactionId] = claim
            return true
        }
        switch LinkClaim.verdict(existing: existing, incoming: claim) {
        case .keepExisting: return false
        case .takeIncoming:
            winners[claim.originalTransactionId] = claim
            return existing.appTransactionId != claim.appTransactionId
        case .needsRaws(let refs): throw MissingRawJWS(refs: refs)
        }
    }

    /// The customer an event belongs to: the one its originalTransactionId X
    /// is linked to, else `otid:<X>`; an event without one (an AppTransaction,
    /// a notification with only `data.appTransactionId`) belongs to the
    /// appTransactionId it carries (``Event/customerKey``).
    public func owner(of event: Event) -> CustomerKey? {
        if let otid = event.originalTransactionId { return owner(ofOriginalTransactionId: otid) }
        // A record filed under an otid: key (a usage recorded before the merge) follows its link too.
        return event.customerKey.map(resolve)
    }

    /// The customer `key` names: an appTransactionId, or `otid:<X>`, which
    /// answers as an alias of the customer X belongs to.
    public func resolve(_ key: CustomerKey) -> CustomerKey {
        guard key.hasPrefix("otid:") else { return key }
        return owner(ofOriginalTransactionId: String(key.dropFirst(5)))
    }

    /// The customer of the originalTransactionId `otid` under these links.
    public func owner(ofOriginalTransactionId otid: String) -> CustomerKey {
        Self.owner(ofOriginalTransactionId: otid) { winners[$0]?.appTransactionId }
    }

    /// The customer of the originalTransactionId `otid`, given what each
    /// originalTransactionId's winning claim names (`target`): the
    /// appTransactionId it is linked to; through a migration's claim (`otid:<P>`),
    /// the customer of P; `otid:<X>` for the X the walk ends at, linked to
    /// nothing. Claims that go round in a circle end at the least X of the circle.
    public static func owner<Failure: Error>(
        ofOriginalTransactionId otid: String, target: (String) throws(Failure) -> CustomerKey?
    ) throws(Failure) -> CustomerKey {
        var current = otid
        var walked: [String] = []
        while let next = try target(current) {
            guard next.hasPrefix("otid:") else { return next }
            walked.append(current)
            let previous = String(next.dropFirst(5))
            if let start = walked.firstIndex(of: previous) { return "otid:" + walked[start...].min()! }
            current = previous
        }
        return "otid:" + current
    }

    /// Every customer's state after `events` (any order, any duplicates): each
    /// event goes to its ``owner(of:)`` under the links of all of `events`.
    /// - Throws: ``MissingRawJWS`` as ``CustomerState/apply(_:rules:)`` and ``add(_:)``.
    public static func customers(of events: [Event], rules: Rules) throws(MissingRawJWS) -> [CustomerKey: CustomerState] {
        let links = try CustomerLinks(events)
        var states: [CustomerKey: CustomerState] = [:]
        for event in events {
            guard let key = links.owner(of: event) else { continue }
            try states[key, default: CustomerState(key: key)].apply(event, rules: rules)
        }
        return states
    }
}
