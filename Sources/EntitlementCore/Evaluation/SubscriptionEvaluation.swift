/// Auto-renewable subscriptions: one per `originalTransactionId` (specification section 5).
enum SubscriptionEvaluation {
    /// What decides a subscription's access at a moment: its current transaction,
    /// its status and, when it grants, until when.
    struct Decision {
        /// The current transaction (its Advanced Commerce items grant beside its product).
        var current: TransactionFacts
        var status: SubscriptionStatus
        var grant: GrantExpiry?
    }

    /// The moments a subscription's status (section 5) can change, ascending: each
    /// purchase, expiry and revocation of its transactions, and each renewal-info
    /// version's `signedDate` and grace end. Deciding the status at each, in order,
    /// sees every turn.
    static func statusMoments(of transactions: [TransactionFacts], versions: [Signed<RenewalFacts>]) -> [Int64] {
        // An array sorted once and its repeats dropped: a handful of moments, no hashing.
        var moments: [Int64] = []
        moments.reserveCapacity(transactions.count * 3 + versions.count * 2)
        for t in transactions {
            moments.append(t.purchaseDate)
            if let expires = t.expiresDate { moments.append(expires) }
            if let revoked = t.revocationDate { moments.append(revoked) }
        }
        for version in versions {
            moments.append(version.facts.signedDate)
            if let grace = version.facts.gracePeriodExpiresDate { moments.append(grace) }
        }
        moments.sort()
        var kept = 0
        for index in moments.indices where kept == 0 || moments[index] != moments[kept - 1] {
            moments[kept] = moments[index]
            kept += 1
        }
        moments.removeLast(moments.count - kept)
        return moments
    }

    /// The index of the renewal info that stands at `at` (as ``renewalInfo(in:at:)``
    /// chooses it), `nil` when there is none.
    static func standingIndex(in versions: [Signed<RenewalFacts>], at: Int64) -> Int? {
        guard !versions.isEmpty else { return nil }
        var chosen = 0
        for index in versions.indices.dropFirst() {
            guard versions[index].facts.signedDate <= at else { break }
            chosen = index
        }
        return chosen
    }

    /// The renewal info that stands at `at`: the latest signed at or before
    /// `at`, else (none was) the earliest.
    /// - Parameter versions: All versions, sorted by `signedDate` ascending.
    static func renewalInfo(in versions: [Signed<RenewalFacts>], at: Int64) -> (RenewalFacts, RenewalRuns)? {
        // Indices, not copies: each copy of the facts retains every string in them.
        guard !versions.isEmpty else { return nil }
        var chosen = 0
        var runs = RenewalRuns()
        for index in versions.indices {
            guard index == 0 || versions[index].facts.signedDate <= at else { break }
            chosen = index
            runs.append(versions[index].facts)
        }
        return (versions[chosen].facts, runs)
    }

    /// The current transaction: the latest `purchaseDate`, then latest
    /// `expiresDate`, then greatest `transactionId`, among those not passed over
    /// for an upgrade.
    ///
    /// A transaction marked `isUpgraded` (by a version signed at the upgrade,
    /// known now) is passed over only once its upgrade counts: another counted
    /// transaction bought at or after it. Evaluating a moment before the
    /// upgrade was bought, the upgraded transaction was still the current one,
    /// so an earlier period does not become current again. When every counted
    /// transaction is passed over, all are candidates.
    static func current(among transactions: [TransactionFacts]) -> TransactionFacts? {
        currentIndex(among: transactions) { transactionIdPrecedes($0.transactionId, $1.transactionId) }.map { transactions[$0] }
    }

    /// The index in `periods` of the current one (see ``current(among:)``), `nil` when empty.
    /// - Parameter idPrecedes: Whether the first period's `transactionId` precedes the
    ///   second's (``transactionIdPrecedes(_:_:)``), asked only of periods bought and
    ///   expiring in the same milliseconds.
    static func currentIndex<Periods: RandomAccessCollection>(
        among periods: Periods, idPrecedes: (Periods.Element, Periods.Element) -> Bool
    ) -> Periods.Index? where Periods.Element: SubscriptionPeriod {
        // The latest purchase, and whether another transaction was bought in the same millisecond.
        var latest = Int64.min
        var sharedLatest = false
        for t in periods {
            if t.purchaseDate > latest {
                latest = t.purchaseDate
                sharedLatest = false
            } else if t.purchaseDate == latest {
                sharedLatest = true
            }
        }
        var best: Periods.Index?
        var bestOfAll: Periods.Index?
        for index in periods.indices {
            if bestOfAll.map({ precedes(periods[$0], periods[index], idPrecedes: idPrecedes) }) ?? true { bestOfAll = index }
            let t = periods[index]
            if t.isUpgraded, t.purchaseDate < latest || sharedLatest { continue }
            if best.map({ precedes(periods[$0], periods[index], idPrecedes: idPrecedes) }) ?? true { best = index }
        }
        return best ?? bestOfAll
    }

    /// Whether `lhs` comes before `rhs` in the order that picks the current transaction.
    static func precedes(_ lhs: TransactionFacts, _ rhs: TransactionFacts) -> Bool {
        precedes(lhs, rhs) { transactionIdPrecedes($0.transactionId, $1.transactionId) }
    }

    /// The same order for any periods, their `transactionId`s compared by `idPrecedes`.
    @inline(__always)
    static func precedes<Period: SubscriptionPeriod>(_ lhs: Period, _ rhs: Period, idPrecedes: (Period, Period) -> Bool) -> Bool {
        if lhs.purchaseDate != rhs.purchaseDate { return lhs.purchaseDate < rhs.purchaseDate }
        let lhsExpires = lhs.expiresDate ?? Int64.min
        let rhsExpires = rhs.expiresDate ?? Int64.min
        if lhsExpires != rhsExpires { return lhsExpires < rhsExpires }
        return idPrecedes(lhs, rhs)
    }

    /// The status of a subscription whose current transaction is `current`,
    /// decided in the specification's order.
    static func status(current: TransactionFacts, renewalInfo: RenewalFacts?, at: Int64) -> SubscriptionStatus {
        // A prorated refund of a subscription is handled as a full one.
        if current.isRevoked(at: at) { return .revoked }
        if let expiresDate = current.expiresDate, expiresDate > at { return .active }
        if let renewalInfo, renewalInfo.isInBillingRetryPeriod {
            // A month of a 12-month commitment has no grace period (Apple): its billing retry is just that.
            if let gracePeriodExpiresDate = renewalInfo.gracePeriodExpiresDate, gracePeriodExpiresDate > at, !current.isCommitmentMonth {
                return .gracePeriod
            }
            return .billingRetry
        }
        return .expired
    }

    /// ``status(current:renewalInfo:at:)`` of `transactions[current]` with
    /// `versions[standing]` (none when `nil`), read in place: neither is copied.
    @inline(__always)
    static func status(
        of transactions: [TransactionFacts], _ current: Int, renewals versions: [Signed<RenewalFacts>], _ standing: Int?, at: Int64
    ) -> SubscriptionStatus {
        if let revoked = transactions[current].revocationDate, revoked <= at { return .revoked }
        if let expiresDate = transactions[current].expiresDate, expiresDate > at { return .active }
        if let standing, versions[standing].facts.isInBillingRetryPeriod {
            if let grace = versions[standing].facts.gracePeriodExpiresDate, grace > at, !transactions[current].isCommitmentMonth { return .gracePeriod }
            return .billingRetry
        }
        return .expired
    }

    /// Decides one subscription from its counted transactions.
    /// - Parameters:
    ///   - transactions: The transactions of `originalTransactionId` counted at `at` (at least one).
    ///   - renewalInfo: The renewal info that stands at `at`.
    static func decide(
        originalTransactionId: String, transactions: [TransactionFacts], renewalInfo: RenewalFacts?, rules: Rules, at: Int64
    ) -> Decision {
        // Callers pass at least one transaction; an empty list is evaluated as an expired placeholder.
        let current =
            current(among: transactions)
            ?? TransactionFacts(
                transactionId: originalTransactionId, originalTransactionId: originalTransactionId, productId: "",
                type: .autoRenewable, purchaseDate: at, signedDate: at)
        let status = status(current: current, renewalInfo: renewalInfo, at: at)

        let grant: GrantExpiry?
        switch status {
        case .revoked, .expired:
            grant = nil
        case .active:
            grant = .until(current.expiresDate ?? at)
        case .gracePeriod:
            // Never a month of a 12-month commitment: ``status(current:renewalInfo:at:)`` says billing retry for it.
            grant = rules.gracePeriodGrantsAccess ? .until(renewalInfo?.gracePeriodExpiresDate ?? at) : nil
        case .billingRetry:
            // Billing retry has no known end: the expiry reported is the end of
            // the last paid period (in the past), so a client caching it asks again.
            // A commitment month in billing retry grants nothing, whatever the rules say.
            grant = rules.billingRetryGrantsAccess && !current.isCommitmentMonth ? .until(current.expiresDate ?? at) : nil
        }
        return Decision(current: current, status: status, grant: grant)
    }

    /// The view of a subscription decided at `at`.
    /// - Parameter standing: The renewal info that stands at `at`, and the runs of versions up to it.
    static func view(
        of decision: Decision, originalTransactionId: String, renewalInfo standing: (RenewalFacts, RenewalRuns)?, at: Int64
    ) -> SubscriptionView {
        let renewalInfo = standing?.0
        let runs = standing?.1 ?? RenewalRuns()
        let current = decision.current
        let status = decision.status
        let commitment = current.extensions?.commitment
        var willRenew =
            renewalInfo?.autoRenewStatus == true && (status == .active || status == .gracePeriod || status == .billingRetry)
        // The last month of a commitment the customer cancelled renews no further
        // (auto-renew stays on while later months of the commitment remain).
        if willRenew, renewalInfo?.commitmentAutoRenewStatus == false, let commitment,
            let number = commitment.billingPeriodNumber, let total = commitment.totalBillingPeriods, number >= total
        {
            willRenew = false
        }
        let renewalExtensions = renewalInfo?.extensions
        let commitmentView = commitment.map { info in
            CommitmentView(
                billingPeriodNumber: info.billingPeriodNumber, totalBillingPeriods: info.totalBillingPeriods,
                commitmentExpiresDate: info.commitmentExpiresDate, commitmentPrice: info.commitmentPrice,
                autoRenewStatus: renewalInfo?.commitmentAutoRenewStatus,
                autoRenewProductId: renewalExtensions?.commitment?.commitmentAutoRenewProductId,
                renewalDate: renewalExtensions?.commitment?.commitmentRenewalDate,
                renewalPrice: renewalExtensions?.commitment?.commitmentRenewalPrice)
        }

        return SubscriptionView(
            originalTransactionId: originalTransactionId, productId: current.productId,
            subscriptionGroupIdentifier: current.subscriptionGroupIdentifier, status: status,
            expiresDate: current.expiresDate, gracePeriodExpiresDate: renewalInfo?.gracePeriodExpiresDate,
            autoRenewStatus: renewalInfo?.autoRenewStatus, autoRenewProductId: renewalInfo?.autoRenewProductId,
            ownership: current.ownership?.rawValue,
            revocationType: status == .revoked ? current.revocationType?.rawValue : nil,
            currentTransactionId: current.transactionId, grants: decision.grant != nil, purchaseDate: current.purchaseDate,
            originalPurchaseDate: current.originalPurchaseDate, periodType: periodType(of: current),
            offerPeriod: current.offerPeriod,
            willRenew: willRenew,
            revocationDate: current.isRevoked(at: at) ? current.revocationDate : nil, price: current.price,
            currency: current.currency,
            unsubscribeDetectedAt: renewalInfo?.autoRenewStatus == false ? runs.autoRenewOffSince : nil,
            billingIssueDetectedAt: renewalInfo?.isInBillingRetryPeriod == true ? runs.billingRetrySince : nil,
            billingPlanType: current.extensions?.billingPlanType, commitment: commitmentView,
            expirationIntent: renewalInfo?.expirationIntent, priceIncreaseStatus: renewalExtensions?.priceIncreaseStatus,
            renewalPrice: renewalExtensions?.renewalPrice, renewalCurrency: renewalExtensions?.currency,
            offerDiscountType: current.offerDiscountType, eligibleWinBackOfferIds: renewalExtensions?.eligibleWinBackOfferIds,
            advancedCommerceItems: current.extensions?.items)
    }

    /// `trial` for a `FREE_TRIAL` discount, else by `offerType`: 1 `intro`,
    /// 2 `promotional`, 3 `offer_code`, 4 `win_back`, none `normal` (a type
    /// Apple adds later: `offer`).
    static func periodType(of transaction: TransactionFacts) -> String {
        if transaction.offerDiscountType == "FREE_TRIAL" { return "trial" }
        switch transaction.offerType {
        case nil: return "normal"
        case 1?: return "intro"
        case 2?: return "promotional"
        case 3?: return "offer_code"
        case 4?: return "win_back"
        case _?: return "offer"
        }
    }
}

/// Since when a subscription's renewal infos have said, without a break, that
/// auto-renew is off and that billing is being retried: the `signedDate` of the
/// earliest version of each run, up to the standing version.
struct RenewalRuns: Hashable {
    var autoRenewOffSince: Int64? = nil
    var billingRetrySince: Int64? = nil

    /// Adds the next version (ascending by `signedDate`).
    mutating func append(signedDate: Int64, autoRenewOff: Bool, billingRetry: Bool) {
        autoRenewOffSince = autoRenewOff ? (autoRenewOffSince ?? signedDate) : nil
        billingRetrySince = billingRetry ? (billingRetrySince ?? signedDate) : nil
    }

    mutating func append(_ facts: RenewalFacts) {
        append(
            signedDate: facts.signedDate, autoRenewOff: facts.autoRenewStatus == false,
            billingRetry: facts.isInBillingRetryPeriod)
    }
}
