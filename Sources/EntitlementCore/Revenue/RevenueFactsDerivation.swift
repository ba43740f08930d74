extension RevenueFacts {
    /// A day in milliseconds.
    static let day: Int64 = 86_400_000

    /// What a customer's data contributes to the ledger and the metrics.
    /// - Parameters:
    ///   - state: The customer's state (everything known).
    ///   - events: The customer's events, any order, duplicates allowed: the earlier
    ///     versions of revoked transactions (a refund reversed later) and the
    ///     environment of each transaction are read from them.
    ///   - lifecycle: The customer's lifecycle events (``LifecycleEvents/all(state:events:consumptionReasons:rules:)``),
    ///     when already at hand; derived here otherwise.
    public static func derive(state: CustomerState, events: [Event], lifecycle: [LifecycleEvent]? = nil) -> RevenueFacts {
        derive(
            state: state, events: events,
            turns: lifecycle.map(SubscriptionTurns.init(lifecycle:)) ?? LifecycleEvents.turns(state: state, events: events))
    }

    /// What a customer's data contributes to the ledger and the metrics, from the
    /// subscriptions' turns its lifecycle derives (``UnrecordedLifecycle/turns``).
    public static func derive(state: CustomerState, events: [Event], turns: SubscriptionTurns) -> RevenueFacts {
        var derivation = RevenueDerivation(state: state, events: events)
        var facts = RevenueFacts(customer: state.key)
        facts.entries = derivation.ledgerEntries()
        facts.subscriptions = derivation.subscriptions(turns: turns)
        return facts
    }

    /// The amount a revocation takes back, negative: the whole price, or for a prorated
    /// refund price × `revocationPercentage` / 100000, rounded half away from zero.
    public static func refundAmount(price: Int64, type: RevocationType?, percentage: Int64?) -> Int64 {
        if case .refundProrated? = type, let percentage {
            return -Rounding.scale(price, by: Int128(percentage), over: 100_000)
        }
        return -price
    }
}

/// The work of ``RevenueFacts/derive(state:events:turns:)``.
private struct RevenueDerivation {
    let state: CustomerState
    let events: [Event]
    /// Transactions seen in a Production event, for a customer whose data came from several environments.
    var productionTransactions: Set<String>? = nil

    init(state: CustomerState, events: [Event]) {
        self.state = state
        self.events = events
        if state.environments.contains(.production), state.environments != .production {
            var production = Set<String>()
            for event in events where event.environment == .production {
                if let t = Self.carried(by: event) { production.insert(t.transactionId) }
            }
            productionTransactions = production
        }
    }

    static func carried(by event: Event) -> TransactionFacts? {
        switch event.body {
        case .transaction(let t): return t.facts
        case .notification(let n): return n.transaction?.facts
        case .renewalInfo, .appTransaction, .receipt, .usage, .operatorAction: return nil
        }
    }

    /// Whether the transaction's data is Production data.
    func isProduction(_ transactionId: String) -> Bool {
        guard state.environments.contains(.production) else { return false }
        return productionTransactions?.contains(transactionId) ?? true
    }

    /// Production, owned `PURCHASED`: the data the figures read.
    func counts(_ t: TransactionFacts) -> Bool {
        guard case .purchased? = t.ownership else { return false }
        return isProduction(t.transactionId)
    }

    /// A sale: counted, with a non-zero price and a currency.
    func isSale(_ t: TransactionFacts) -> Bool {
        guard let price = t.price, price != 0, t.currency != nil else { return false }
        return counts(t)
    }

    mutating func ledgerEntries() -> [LedgerEntry] {
        // Each subscription's first paid transaction, for the commission's year.
        var firstPaid: [String: Int64] = [:]
        var entries: [LedgerEntry] = []
        var revoked: [String: [TransactionFacts]] = [:]
        // One pass over the transactions (each step copies a version); the commission's year is settled after.
        var renewable: [Int] = []
        for version in state.transactions.values where isSale(version.facts) {
            let t = version.facts
            if t.type == .autoRenewable {
                firstPaid[t.originalTransactionId] = min(firstPaid[t.originalTransactionId] ?? t.purchaseDate, t.purchaseDate)
                renewable.append(entries.count)
            }
            let entry = LedgerEntry(
                at: t.purchaseDate, type: .sale, transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                productId: t.productId, currency: t.currency!, amount: t.price!, reducedCommission: false, ref: version.ref)
            entries.append(entry)
            // Without events, the latest version is the only one: only a revoked one is read again.
            if !events.isEmpty || t.revocationDate != nil { revoked[t.transactionId] = [t] }
        }
        for index in renewable {
            let first = firstPaid[entries[index].originalTransactionId] ?? entries[index].at
            entries[index].reducedCommission = entries[index].at - first >= 365 * RevenueFacts.day
        }
        // Every version of each sold transaction, from the events: a refund reversed later
        // leaves no trace in the latest version.
        var anyRevoked = Set<String>()
        for (id, versions) in revoked where versions[0].revocationDate != nil { anyRevoked.insert(id) }
        for event in events {
            guard let t = Self.carried(by: event), revoked[t.transactionId] != nil else { continue }
            revoked[t.transactionId]!.append(t)
            if t.revocationDate != nil { anyRevoked.insert(t.transactionId) }
        }
        let sales = entries
        for sale in sales where anyRevoked.contains(sale.transactionId) {
            entries += revocations(of: sale, versions: revoked[sale.transactionId]!)
        }
        // In the ledger's order, whatever order the state's transactions were read in, so that
        // the same data always encodes to the same bytes.
        entries.sort(by: LedgerEntry.precedes)
        return entries
    }

    /// The refunds (one per revocation date any version carried) and reversals (a version
    /// without revocation signed next after one with it) of a sold transaction.
    func revocations(of sale: LedgerEntry, versions: [TransactionFacts]) -> [LedgerEntry] {
        // By revocation date, the latest-signed version that carries it.
        var byRevocation: [Int64: TransactionFacts] = [:]
        for t in versions {
            guard let date = t.revocationDate else { continue }
            if let known = byRevocation[date], known.signedDate >= t.signedDate { continue }
            byRevocation[date] = t
        }
        func amount(_ t: TransactionFacts) -> Int64 {
            RevenueFacts.refundAmount(price: t.price ?? sale.amount, type: t.revocationType, percentage: t.revocationPercentage)
        }
        func line(_ type: LedgerEntryType, at: Int64, amount: Int64) -> LedgerEntry {
            var entry = sale
            entry.type = type
            entry.at = at
            entry.amount = amount
            return entry
        }
        var lines: [LedgerEntry] = []
        for date in byRevocation.keys.sorted() { lines.append(line(.refund, at: date, amount: amount(byRevocation[date]!))) }
        // By signedDate: the revoked copy, if any copy signed then was revoked.
        var bySigned: [Int64: TransactionFacts?] = [:]
        for t in versions {
            if t.revocationDate != nil {
                bySigned[t.signedDate] = .some(t)
            } else if bySigned[t.signedDate] == nil {
                bySigned[t.signedDate] = .some(nil)
            }
        }
        let signed = bySigned.keys.sorted()
        for (previous, next) in zip(signed, signed.dropFirst()) {
            guard case .some(let revokedVersion?) = bySigned[previous], case .some(nil) = bySigned[next] else { continue }
            let refund = byRevocation[revokedVersion.revocationDate!] ?? revokedVersion
            lines.append(line(.refundReversed, at: next, amount: -amount(refund)))
        }
        return lines
    }

    /// The Production subscriptions owned `PURCHASED`.
    func subscriptions(turns: SubscriptionTurns) -> [SubscriptionRevenueFacts] {
        // Sorted already when the lifecycle's derivation passes them along.
        let sorted = turns.subscriptions != nil
        var grouped = turns.subscriptions ?? [:]
        if !sorted {
            for version in state.transactions.values where version.facts.type == .autoRenewable {
                grouped[version.facts.originalTransactionId, default: []].append(version.facts)
            }
        }
        /// Whether the turn is of a subscription here, about a counted transaction.
        func counted(_ turn: SubscriptionTurns.Turn) -> Bool {
            guard grouped[turn.originalTransactionId] != nil, let version = state.transactions[turn.transactionId] else { return false }
            return counts(version.facts)
        }
        var conversions: [String: [Int64]] = [:]
        var expirations: [String: [SubscriptionRevenueFacts.Expiration]] = [:]
        for turn in turns.conversions where counted(turn) {
            conversions[turn.originalTransactionId, default: []].append(turn.at)
        }
        for turn in turns.expirations where counted(turn) {
            expirations[turn.originalTransactionId, default: []].append(.init(at: turn.at, voluntary: turn.voluntary))
        }
        var result: [SubscriptionRevenueFacts] = []
        for otid in grouped.keys.sorted() {
            // Sorted in place: a sorted copy would copy (and retain) every transaction's facts.
            if !sorted { grouped[otid]!.sort { SubscriptionEvaluation.precedes($0, $1) } }
            let transactions = grouped[otid]!
            var facts = SubscriptionRevenueFacts(originalTransactionId: otid)
            for t in transactions where counts(t) {
                if t.offerDiscountType == "FREE_TRIAL" {
                    facts.firstTrialAt = min(facts.firstTrialAt ?? t.purchaseDate, t.purchaseDate)
                } else {
                    facts.firstPaidAt = min(facts.firstPaidAt ?? t.purchaseDate, t.purchaseDate)
                }
            }
            facts.activeSpans = activeSpans(transactions, versions: state.renewalInfos[otid] ?? [])
            facts.trialConversions = (conversions[otid] ?? []).sorted()
            facts.expirations = (expirations[otid] ?? []).sorted { $0.at < $1.at }
            guard facts.firstPaidAt != nil || facts.firstTrialAt != nil || !facts.activeSpans.isEmpty
                || !facts.trialConversions.isEmpty || !facts.expirations.isEmpty
            else { continue }
            result.append(facts)
        }
        return result
    }

    /// The spans in which the subscription's status (section 5) was `active` or
    /// `grace_period` with a counted current transaction. The status changes only at a
    /// purchase, an expiry, a revocation, a renewal info's `signedDate` or grace end, so
    /// it is decided at each such moment and holds until the next.
    func activeSpans(_ transactions: [TransactionFacts], versions: [Signed<RenewalFacts>]) -> [ActiveSpan] {
        let ordered = SubscriptionEvaluation.statusMoments(of: transactions, versions: versions)
        var spans: [ActiveSpan] = []
        // `transactions` are sorted by purchaseDate first: those bought by a moment are a prefix, and
        // the current one among them (``SubscriptionEvaluation/current(among:)``) is the prefix's last,
        // or when that one is upgraded and shares its purchaseDate, the last not marked upgraded.
        var bought = 0
        var lastNotUpgraded: Int? = nil
        // The renewal info standing at each moment (``SubscriptionEvaluation/renewalInfo(in:at:)``): moments ascend.
        var standing = 0
        for (index, moment) in ordered.enumerated() {
            while bought < transactions.count, transactions[bought].purchaseDate <= moment {
                if !transactions[bought].isUpgraded { lastNotUpgraded = bought }
                bought += 1
            }
            while standing + 1 < versions.count, versions[standing + 1].facts.signedDate <= moment { standing += 1 }
            guard bought > 0 else { continue }
            // Read in place: a copy of the facts retains every string in them. The last bought is
            // current unless it is upgraded and another was bought in its millisecond (its upgrade).
            let last = bought - 1
            let sharesItsMillisecond = last > 0 && transactions[last - 1].purchaseDate == transactions[last].purchaseDate
            let current = sharesItsMillisecond ? (lastNotUpgraded ?? last) : last
            let status = SubscriptionEvaluation.status(
                of: transactions, current, renewals: versions, versions.isEmpty ? nil : standing, at: moment)
            guard status == .active || status == .gracePeriod, counts(transactions[current]) else { continue }
            let end = index + 1 < ordered.count ? ordered[index + 1] : Int64.max
            let trial = transactions[current].offerDiscountType == "FREE_TRIAL"
            let purchaseDate = transactions[current].purchaseDate
            let duration = transactions[current].expiresDate.map { $0 - purchaseDate }
            if let last = spans.last, last.to == moment, last.trial == trial, last.productId == transactions[current].productId,
                last.purchaseDate == purchaseDate, last.price == transactions[current].price,
                last.currency == transactions[current].currency, last.duration == duration
            {
                spans[spans.count - 1].to = end
                continue
            }
            spans.append(
                ActiveSpan(
                    from: moment, to: end, trial: trial, productId: transactions[current].productId, price: transactions[current].price,
                    currency: transactions[current].currency, purchaseDate: purchaseDate, duration: duration))
        }
        return spans
    }
}
