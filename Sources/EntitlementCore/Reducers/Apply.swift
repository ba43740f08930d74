extension CustomerState {
    /// Folds one verified event into the state.
    ///
    /// The state keeps, for every signed object the event carries (a
    /// transaction, a renewal info, an AppTransaction, standalone or nested in
    /// a notification), the greatest version by `signedDate`, then by raw JWS
    /// (see specification section 5). Because that is a maximum, applying the same
    /// events in any order, with any duplicates, gives an equal state.
    ///
    /// - A transaction replaces the stored one with the same `transactionId`
    ///   when it is greater.
    /// - A renewal info is added to the versions of its
    ///   `originalTransactionId`, one per `signedDate` (the greater wins on an
    ///   equal `signedDate`), kept sorted ascending: evaluation at a past moment
    ///   needs the version that was current then.
    /// - An AppTransaction replaces the stored one when it is greater.
    /// - ``accountToken`` becomes the `appAccountToken` of the latest-signed
    ///   transaction or renewal info that carries one (on an equal `signedDate`
    ///   and another token, the greater raw JWS, as between versions).
    /// - ``lastNotification`` becomes the notification's summary when it is
    ///   greater by (`signedDate`, `notificationUUID`).
    /// - ``environments`` gains the event's environment.
    /// - ``consentRescindedAt`` becomes the earliest RESCIND_CONSENT's `signedDate`.
    /// - ``eventNeeds`` gains what the event makes the derivations read from the log.
    ///
    /// A notification's type never overrides the signed data it carries: a
    /// REFUND is a revocation because its transaction carries a
    /// `revocationDate`, a REFUND_REVERSED restores because its later-signed
    /// transaction carries none. The event's key is not checked: the caller
    /// routes events by ``Event/customerKey``.
    ///
    /// - Parameters:
    ///   - event: A verified event.
    ///   - rules: The business rules. State is rules-independent (evaluation
    ///     applies them); they are taken so that every reducer has the same shape.
    /// - Throws: ``MissingRawJWS`` when a version with the same `signedDate` but
    ///   different contents must be ordered by raw JWS and a raw is not at hand.
    ///   The state is then left exactly as it was: hydrate the named refs
    ///   (``hydrate(_:)`` here and ``Event/hydrate(_:)`` on the event) and apply again.
    public mutating func apply(_ event: Event, rules: Rules) throws(MissingRawJWS) {
        _ = rules
        switch event.body {
        case .notification(let notification):
            try applySigned(
                transaction: notification.transaction, renewalInfo: notification.renewalInfo,
                appTransaction: notification.appTransaction)
            note(notification)
        case .transaction(let transaction):
            try applySigned(transaction: transaction, renewalInfo: nil, appTransaction: nil)
        case .renewalInfo(let renewalInfo):
            try applySigned(transaction: nil, renewalInfo: renewalInfo, appTransaction: nil)
        case .appTransaction(let appTransaction):
            try applySigned(transaction: nil, renewalInfo: nil, appTransaction: appTransaction)
        case .receipt(let receipt):
            // A receipt's versions never need a raw to be ordered (signed V2 data wins,
            // then the later receipt): no entry throws, so none is left half applied.
            for transaction in receipt.transactions {
                try applySigned(transaction: transaction, renewalInfo: nil, appTransaction: nil)
            }
        case .usage(let usage):
            apply(usage: usage)
        case .operatorAction(let record):
            apply(operatorRecord: record)
        }
        environments.formUnion(EnvironmentSet(event.environment))
    }

    /// Where an incoming renewal info goes among the stored versions.
    private enum RenewalPlacement {
        case insert(at: Int)
        case replace(at: Int)
    }

    /// Decides every change first, reading only, then commits them all: a
    /// throw leaves the state untouched.
    mutating func applySigned(
        transaction: Signed<TransactionFacts>?, renewalInfo: Signed<RenewalFacts>?,
        appTransaction: Signed<AppTransactionFacts>?
    ) throws(MissingRawJWS) {
        var missing = Set<RawRef>()

        // Each id is hashed once to be found; the commit changes what was found through its index.
        var renewalPlacement: RenewalPlacement?
        var renewalIndex: [String: [Signed<RenewalFacts>]].Index? = nil
        if let renewalInfo {
            renewalIndex = renewalGroup(of: renewalInfo.facts.originalTransactionId)
            renewalPlacement = placement(of: renewalInfo, among: renewalIndex.map { renewalInfos.values[$0] }, missing: &missing)
        }

        var takeAppTransaction = false
        if let appTransaction {
            if let existing = self.appTransaction {
                switch Signed.verdict(existing: existing, incoming: appTransaction) {
                case .keepExisting: break
                case .takeIncoming: takeAppTransaction = true
                case .needsRaws(let refs): missing.formUnion(refs)
                }
            } else {
                takeAppTransaction = true
            }
        }

        // The account token's claims (a transaction's, then a renewal info's), each against
        // the winner so far.
        // (No array of the two: this runs for every event applied.)
        var tokenWinner = accountToken
        // Read through the optionals, not bound: a binding copies the whole version.
        let transactionClaim = Self.tokenClaim(
            token: transaction?.facts.appAccountToken, signedDate: transaction?.facts.signedDate, ref: transaction?.ref,
            raw: transaction?.raw)
        let renewalClaim = Self.tokenClaim(
            token: renewalInfo?.facts.appAccountToken, signedDate: renewalInfo?.facts.signedDate, ref: renewalInfo?.ref,
            raw: renewalInfo?.raw)
        let tokenClaims = (transactionClaim == nil ? 0 : 1) + (renewalClaim == nil ? 0 : 1)
        if tokenClaims > 0 {
            Self.decide(transactionClaim, against: &tokenWinner, missing: &missing)
            Self.decide(renewalClaim, against: &tokenWinner, missing: &missing)
        }

        // The transaction is decided last, in its own slot: its id is hashed once whether
        // the version is new or replaces one, and the slot is written only when no
        // verdict (its own or the ones above) needs raws.
        if let transaction {
            Self.settle(&transactions[transaction.facts.transactionId], with: transaction, missing: &missing)
        }

        guard missing.isEmpty else { throw MissingRawJWS(refs: missing) }

        // Commit the rest. Each version is bound once: a binding copies it.
        if transaction?.facts.revocationDate != nil { noteEventNeeds(revoked: true) }
        if tokenClaims > 0 {
            // A second token beside the standing one, whichever wins (so that it does not
            // depend on the order of arrival).
            if let standing = accountToken?.token {
                if let token = transaction?.facts.appAccountToken { noteEventNeeds(token: token, beside: standing) }
                if let token = renewalInfo?.facts.appAccountToken { noteEventNeeds(token: token, beside: standing) }
            }
            if let transactionToken = transaction?.facts.appAccountToken, let renewalToken = renewalInfo?.facts.appAccountToken {
                noteEventNeeds(token: transactionToken, beside: renewalToken)
            }
            accountToken = consume tokenWinner
        }
        if let renewalInfo {
            if let renewalPlacement {
                if let renewalIndex {
                    switch renewalPlacement {
                    case .insert(let index): renewalInfos.values[renewalIndex].insert(renewalInfo, at: index)
                    case .replace(let index): renewalInfos.values[renewalIndex][index] = renewalInfo
                    }
                } else {
                    renewalInfos[renewalInfo.facts.originalTransactionId] = Self.firstVersion(renewalInfo)
                }
            }
        }
        if takeAppTransaction {
            self.appTransaction = appTransaction
        }
    }

    /// Where the versions of `originalTransactionId` are in ``renewalInfos``, if there.
    /// A customer mostly has one subscription: its one group is then compared (usually
    /// the very same `String`), not hashed.
    private func renewalGroup(of originalTransactionId: String) -> [String: [Signed<RenewalFacts>]].Index? {
        if renewalInfos.count == 1, renewalInfos.keys[renewalInfos.startIndex] == originalTransactionId {
            return renewalInfos.startIndex
        }
        return renewalInfos.index(forKey: originalTransactionId)
    }

    /// Puts `incoming` in `slot` (a transaction's place in ``transactions``) when it is
    /// the greater version and `missing` is empty; adds the refs its verdict needs to `missing`.
    private static func settle(
        _ slot: inout Signed<TransactionFacts>?, with incoming: Signed<TransactionFacts>, missing: inout Set<RawRef>
    ) {
        guard let existing = slot else {
            if missing.isEmpty { slot = incoming }
            return
        }
        switch Signed.verdict(existing: existing, incoming: incoming) {
        case .keepExisting: break
        case .takeIncoming: if missing.isEmpty { slot = incoming }
        case .needsRaws(let refs): missing.formUnion(refs)
        }
    }

    /// A new `originalTransactionId`'s versions: the first, with room for the renewals
    /// that follow (a subscription's renewal info is signed again at every renewal).
    private static func firstVersion(_ version: Signed<RenewalFacts>) -> [Signed<RenewalFacts>] {
        var versions: [Signed<RenewalFacts>] = []
        versions.reserveCapacity(8)
        versions.append(version)
        return versions
    }

    /// Where `renewalInfo` goes among `versions`, the stored versions of its
    /// `originalTransactionId` (`nil` when none), if anywhere. The versions are let go
    /// before the commit: a copy held until then would make the insertion copy the whole array.
    private func placement(
        of renewalInfo: Signed<RenewalFacts>, among versions: [Signed<RenewalFacts>]?, missing: inout Set<RawRef>
    ) -> RenewalPlacement? {
        guard let versions else { return .insert(at: 0) }
        let index = Self.insertionIndex(of: renewalInfo.facts.signedDate, in: versions)
        guard index < versions.count, versions[index].facts.signedDate == renewalInfo.facts.signedDate else {
            return .insert(at: index)
        }
        switch Signed.verdict(existing: versions[index], incoming: renewalInfo) {
        case .keepExisting: return nil
        case .takeIncoming: return .replace(at: index)
        case .needsRaws(let refs):
            missing.formUnion(refs)
            return nil
        }
    }

    /// The first index whose version is signed at or after `signedDate`.
    private static func insertionIndex(of signedDate: Int64, in versions: [Signed<RenewalFacts>]) -> Int {
        var low = 0
        var high = versions.count
        while low < high {
            let middle = (low + high) / 2
            if versions[middle].facts.signedDate < signedDate { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Makes `claim` the `winner` when it stands against it; adds the refs a tie needs to `missing`.
    private static func decide(_ claim: AccountTokenClaim?, against winner: inout AccountTokenClaim?, missing: inout Set<RawRef>) {
        guard let claim else { return }
        guard let standing = winner else {
            winner = claim
            return
        }
        switch AccountTokenClaim.verdict(existing: standing, incoming: claim) {
        case .keepExisting: break
        case .takeIncoming: winner = claim
        case .needsRaws(let refs): missing.formUnion(refs)
        }
    }

    /// The account token a version claims (its token, signed date, reference and raw JWS),
    /// if it carries one.
    private static func tokenClaim(token: String?, signedDate: Int64?, ref: RawRef?, raw: String?) -> AccountTokenClaim? {
        guard let token, let signedDate, let ref else { return nil }
        return AccountTokenClaim(token: token, signedDate: signedDate, ref: ref, raw: raw)
    }

    /// Keeps the greater notification by (`signedDate`, `notificationUUID`).
    private mutating func note(_ notification: NotificationFacts) {
        note(
            NotificationSummaryFacts(
                notificationUUID: notification.notificationUUID, type: notification.type, subtype: notification.subtype,
                signedDate: notification.signedDate))
    }

    /// Keeps the greater notification by (`signedDate`, `notificationUUID`), and
    /// the earliest RESCIND_CONSENT's `signedDate`.
    mutating func note(_ summary: NotificationSummaryFacts) {
        noteEventNeeds(revoked: false, notificationType: summary.type)
        if summary.type == .rescindConsent {
            consentRescindedAt = min(consentRescindedAt ?? summary.signedDate, summary.signedDate)
        }
        guard let existing = lastNotification else {
            lastNotification = summary
            return
        }
        if summary.signedDate != existing.signedDate {
            if summary.signedDate > existing.signedDate { lastNotification = summary }
        } else if existing.notificationUUID.utf8Precedes(summary.notificationUUID) {
            lastNotification = summary
        }
    }
}

/// A notification read from stored facts, its UUID still bytes (UTF-8, checked) in the
/// buffer read: made into a `String` only when the notification is kept.
struct StoredNotification {
    var uuid: UnsafeRawBufferPointer
    var type: NotificationType
    var subtype: NotificationSubtype?
    var signedDate: Int64

    /// Whether this notification is greater than `other` by (`signedDate`, `notificationUUID`).
    func isLater(than other: StoredNotification) -> Bool {
        if signedDate != other.signedDate { return signedDate > other.signedDate }
        return other.uuid.lexicographicallyPrecedes(uuid)
    }
}

extension CustomerState {
    /// What ``note(_:)`` notes of a notification besides keeping the latest: the event
    /// needs and the earliest RESCIND_CONSENT.
    mutating func noteNeeds(of notification: StoredNotification) {
        noteEventNeeds(revoked: false, notificationType: notification.type)
        if notification.type == .rescindConsent {
            consentRescindedAt = min(consentRescindedAt ?? notification.signedDate, notification.signedDate)
        }
    }

    /// Keeps `notification` as ``lastNotification`` when it is greater by (`signedDate`,
    /// `notificationUUID`): the `String` is made only then.
    mutating func keepIfLatest(_ notification: StoredNotification) {
        if let existing = lastNotification {
            if notification.signedDate != existing.signedDate {
                guard notification.signedDate > existing.signedDate else { return }
            } else {
                guard existing.notificationUUID.utf8.lexicographicallyPrecedes(notification.uuid) else { return }
            }
        }
        lastNotification = NotificationSummaryFacts(
            notificationUUID: String(decoding: notification.uuid, as: UTF8.self), type: notification.type,
            subtype: notification.subtype, signedDate: notification.signedDate)
    }
}

/// The reducer in functional form: a state and an event in, the next state out.
public enum Reducer {
    /// The state after `event` (see ``CustomerState/apply(_:rules:)``).
    /// - Throws: ``MissingRawJWS`` when a tie between versions needs raw JWS that
    ///   are not at hand.
    public static func reduce(_ state: CustomerState, _ event: Event, rules: Rules) throws(MissingRawJWS) -> CustomerState {
        var next = state
        try next.apply(event, rules: rules)
        return next
    }

    /// The state of `key` after all of `events`, in the order given (any order
    /// gives an equal state).
    /// - Throws: ``MissingRawJWS`` as ``reduce(_:_:rules:)``.
    public static func reduce(
        key: CustomerKey, events: some Sequence<Event>, rules: Rules
    ) throws(MissingRawJWS) -> CustomerState {
        var state = CustomerState(key: key)
        for event in events { try state.apply(event, rules: rules) }
        return state
    }
}
