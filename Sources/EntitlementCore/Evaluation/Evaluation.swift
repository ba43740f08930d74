/// Evaluates a customer's state under the rules at a moment (specification section 5).
///
/// Evaluation sees everything known now but only what had happened by `at`:
/// a transaction counts only if its `purchaseDate` <= `at`, a revocation only
/// if its `revocationDate` <= `at`, and a renewal info only if signed at or
/// before `at` (if none was, the earliest one stands). It is a pure function
/// of the state, the rules and `at`.
public enum Evaluation {
    /// The customer's entitlements, subscriptions, purchases and balances at `at`.
    /// - Parameters:
    ///   - state: The customer's state (see ``CustomerState/apply(_:rules:)``).
    ///   - rules: What each product grants, and whether billing states grant.
    ///   - at: The moment, in milliseconds since 1970.
    public static func evaluate(_ state: CustomerState, rules: Rules, at: Int64) -> CustomerView {
        evaluate(
            key: state.key, accountToken: state.accountToken?.token, environment: state.environments.displayName,
            transactions: state.transactions.values.lazy.map(\.facts),
            renewalInfo: { SubscriptionEvaluation.renewalInfo(in: state.renewalInfos[$0] ?? [], at: at) },
            appTransaction: state.appTransaction?.facts, usages: state.usages.values,
            consentRescindedAt: state.consentRescindedAt, operatorRecords: state.operatorRecords.values, rules: rules, at: at)
    }

    /// The answer at `at` for the state stored as `bytes` (``StateCodec``), decoded
    /// only as far as evaluation at `at` reads it: the transactions into a list
    /// (no dictionary), of each subscription's periods only the current one at `at`
    /// (the others' products still mentioned), and of each subscription's renewal
    /// info versions only the one standing at `at`. Equal to decoding the whole
    /// state and evaluating it.
    /// - Throws: ``CodecError`` for bytes that are truncated or corrupted.
    public static func evaluate(stateBytes bytes: UnsafeRawBufferPointer, rules: Rules, at: Int64) throws(CodecError) -> CustomerView {
        let input = try StateCodec.decode(bytes, standingAt: at, into: EvaluationInput.self)
        // The closure captures the two lists, not the whole input (which it would copy).
        let standing = input.standingRenewalInfos, runs = input.renewalRuns
        return evaluate(
            key: input.key, accountToken: input.accountToken?.token, environment: input.environments.displayName,
            transactions: input.transactions, mentioning: input.passedOverProducts,
            renewalInfo: { otid in
                guard let index = standing.firstIndex(where: { $0.facts.originalTransactionId == otid }) else { return nil }
                return (standing[index].facts, runs[index])
            },
            appTransaction: input.appTransaction?.facts, usages: input.usages, consentRescindedAt: input.consentRescindedAt,
            operatorRecords: input.operatorRecords, rules: rules, at: at)
    }

    /// - Parameters:
    ///   - products: The products of transactions bought by `at` and left out of
    ///     `transactions` because they cannot change the answer (a subscription's
    ///     periods before its current one): their entitlements are still mentioned.
    ///   - renewalInfo: The renewal info standing at `at` for an
    ///     `originalTransactionId`, and the runs of versions up to it.
    static func evaluate(
        key: CustomerKey, accountToken: String?, environment: String?, transactions: some Sequence<TransactionFacts>,
        mentioning products: [String] = [], renewalInfo: (String) -> (RenewalFacts, RenewalRuns)?, appTransaction: AppTransactionFacts?, usages: some Collection<UsageFacts> = [UsageFacts](),
        consentRescindedAt: Int64? = nil, operatorRecords: some Collection<OperatorRecord> = [OperatorRecord](), rules: Rules, at: Int64
    ) -> CustomerView {
        var collected: ViewParts? = ViewParts()
        let ledger = ledger(
            transactions: transactions, mentioning: products, renewalInfo: renewalInfo, usages: usages, consentRescindedAt: consentRescindedAt,
            operatorRecords: operatorRecords, rules: rules, at: at, parts: &collected)
        let parts = collected ?? ViewParts()
        return CustomerView(
            appTransactionId: key, at: at, appAccountToken: accountToken,
            entitlements: ledger.views(), subscriptions: parts.subscriptions, purchases: parts.purchases,
            balances: parts.balances.balances(), environment: environment, originalPurchaseDate: appTransaction?.originalPurchaseDate,
            originalApplicationVersion: appTransaction?.originalApplicationVersion,
            originalPlatform: appTransaction?.originalPlatform,
            consentRescindedAt: consentRescindedAt.flatMap { $0 <= at ? $0 : nil })
    }

    /// What a whole view holds beside its entitlements; the change feed's answer leaves it out.
    struct ViewParts {
        var subscriptions: [SubscriptionView] = []
        var purchases: [PurchaseView] = []
        var balances = BalanceSheet()
    }

    /// The entitlements granted at `at`, and with `parts` the rest of the view: its
    /// subscriptions, purchases and balances (`nil`: the entitlements alone, as the
    /// change feed asks for them at every moment it looks at).
    /// - Parameter products: Products of transactions left out of `transactions`
    ///   (see ``evaluate(key:accountToken:environment:transactions:mentioning:renewalInfo:appTransaction:usages:consentRescindedAt:operatorRecords:rules:at:)``).
    static func ledger(
        transactions: some Sequence<TransactionFacts>, mentioning products: [String] = [], renewalInfo: (String) -> (RenewalFacts, RenewalRuns)?,
        usages: some Collection<UsageFacts>, consentRescindedAt: Int64?, operatorRecords: some Collection<OperatorRecord>,
        rules: Rules, at: Int64, parts: inout ViewParts?
    ) -> EntitlementLedger {
        var ledger = EntitlementLedger()
        // With the rule, a rescinded consent ends every grant then.
        // A rescinded consent ends access from its moment on; before it, as a revocation
        // not yet made, it changes nothing (section 5: only what had happened by `at`).
        if rules.consentRescindedRevokesAccess, let consentRescindedAt, consentRescindedAt <= at { ledger.purchasesGrant = false }
        // Subscriptions by originalTransactionId: a customer has one or a few, so a
        // list searched in place costs less than hashing every transaction's id.
        var autoRenewables: [(originalTransactionId: String, transactions: [TransactionFacts])] = []
        var others: [TransactionFacts] = []

        // A customer's transactions mostly share one product (and, decoded from a
        // stored state, one String): its rule is looked up once per run of it.
        var lastProduct: (id: String, rule: ProductRule?)? = nil
        for product in products { ledger.mention(rules.products[product]?.entitlements ?? []) }
        for transaction in transactions {
            guard transaction.purchaseDate <= at else { continue }
            if lastProduct?.id != transaction.productId {
                let rule = rules.products[transaction.productId]
                ledger.mention(rule?.entitlements ?? [])
                lastProduct = (transaction.productId, rule)
            }
            if let items = transaction.extensions?.items {
                for item in items { if let sku = item.sku { ledger.mention(rules.skus[sku]?.entitlements ?? []) } }
            }
            switch transaction.evaluatedType(rule: lastProduct?.rule) {
            case .autoRenewable:
                if let group = autoRenewables.firstIndex(where: { $0.originalTransactionId == transaction.originalTransactionId }) {
                    autoRenewables[group].transactions.append(transaction)
                } else {
                    autoRenewables.append((transaction.originalTransactionId, [transaction]))
                }
            case .nonConsumable, .consumable, .nonRenewing, .unknown:
                others.append(transaction)
            }
        }

        parts?.subscriptions.reserveCapacity(autoRenewables.count)
        if autoRenewables.count > 1 {
            autoRenewables.sort { transactionIdPrecedes($0.originalTransactionId, $1.originalTransactionId) }
        }
        for (originalTransactionId, transactions) in autoRenewables {
            let renewalInfo = renewalInfo(originalTransactionId)
            let decision = SubscriptionEvaluation.decide(
                originalTransactionId: originalTransactionId, transactions: transactions,
                renewalInfo: renewalInfo?.0, rules: rules, at: at)
            if let expiry = decision.grant {
                let product = decision.current.productId
                ledger.grant(rules.products[product]?.entitlements ?? [], expiry, product: product)
                ledger.grantItems(of: decision.current, expiry, rules: rules, at: at)
            }
            parts?.subscriptions.append(
                SubscriptionEvaluation.view(of: decision, originalTransactionId: originalTransactionId, renewalInfo: renewalInfo, at: at))
        }

        others.sort(by: Self.purchaseOrder)
        var passes = PassStacker()
        parts?.purchases.reserveCapacity(others.count)
        for transaction in others {
            let rule = rules.products[transaction.productId]
            let revoked = transaction.isRevoked(at: at)
            var window: PassWindow?
            let type = transaction.evaluatedType(rule: rule)
            switch type {
            case .nonConsumable:
                if !revoked {
                    ledger.grant(rule?.entitlements ?? [], .forever, product: transaction.productId)
                    ledger.grantItems(of: transaction, .forever, rules: rules, at: at)
                }
            case .consumable:
                parts?.balances.credit(transaction, rule: rule, at: at)
            case .nonRenewing:
                window = passes.window(for: transaction, rule: rule, at: at)
                if let window, window.contains(at) {
                    ledger.grant(rule?.entitlements ?? [], .until(window.end), product: transaction.productId)
                }
            case .autoRenewable, .unknown:
                // Auto-renewables are evaluated above; a type Apple adds later grants nothing until described.
                break
            }
            parts?.purchases.append(
                PurchaseView(
                    transactionId: transaction.transactionId, productId: transaction.productId,
                    type: type.rawValue, quantity: transaction.quantity, revoked: revoked,
                    revocationType: revoked ? transaction.revocationType?.rawValue : nil,
                    revocationPercentage: revoked ? transaction.revocationPercentage : nil,
                    expiresDate: window?.end, startsDate: window?.start, purchaseDate: transaction.purchaseDate,
                    revocationDate: revoked ? transaction.revocationDate : nil, price: transaction.price,
                    currency: transaction.currency, advancedCommerceItems: transaction.extensions?.items))
        }

        if parts != nil {
            for usage in usages where usage.at <= at {
                if case .spend(let currency, let units) = usage.amount { parts?.balances.debit(currency, units: units) }
            }
        }

        if !operatorRecords.isEmpty {
            // What operators gave: grants in force at `at`, credits recorded by then.
            for grant in OperatorGrant.grants(in: operatorRecords) where grant.from <= at {
                ledger.mention([grant.entitlement])
                if grant.isActive(at: at) { ledger.grant(grant.entitlement, until: grant.end, grantId: grant.id) }
            }
            if parts != nil {
                for record in operatorRecords where record.recordedAt <= at {
                    if case .credit(let currency, let units) = record.action { parts?.balances.debit(currency, units: -units) }
                }
            }
        }
        return ledger
    }

    /// `purchaseDate`, then `transactionId`.
    static func purchaseOrder(_ lhs: TransactionFacts, _ rhs: TransactionFacts) -> Bool {
        if lhs.purchaseDate != rhs.purchaseDate { return lhs.purchaseDate < rhs.purchaseDate }
        return transactionIdPrecedes(lhs.transactionId, rhs.transactionId)
    }
}

/// What evaluation reads of a stored state, decoded without dictionaries.
struct EvaluationInput: StateSink {
    var key: CustomerKey
    var transactions: [TransactionFacts] = []
    /// Per `originalTransactionId`, the renewal info version standing at the moment decoded for.
    var standingRenewalInfos: [Signed<RenewalFacts>] = []
    /// The runs up to each of ``standingRenewalInfos``, at the same index.
    var renewalRuns: [RenewalRuns] = []
    var appTransaction: Signed<AppTransactionFacts>? = nil
    var accountToken: AccountTokenClaim? = nil
    var lastNotification: NotificationSummaryFacts? = nil
    var environments: EnvironmentSet = []
    var usages: [UsageFacts] = []
    var consentRescindedAt: Int64? = nil
    var eventNeeds: EventNeeds? = nil
    var operatorRecords: [OperatorRecord] = []
    /// The products of the periods read past (``StateSink/passedOver(productId:)``).
    var passedOverProducts: [String] = []

    static var takesCurrentPeriodsOnly: Bool { true }

    init(key: CustomerKey, transactions: Int) {
        self.key = key
        self.transactions.reserveCapacity(transactions)
    }

    mutating func transaction(_ facts: TransactionFacts, ref: RawRef, at offset: Int) throws(CodecError) {
        transactions.append(facts)
    }

    mutating func passedOver(productId: String) {
        passedOverProducts.append(productId)
    }

    mutating func renewalInfos(_ versions: [Signed<RenewalFacts>], at offset: Int) throws(CodecError) {
        standingRenewalInfos.append(versions[versions.count - 1])
    }

    mutating func renewalRuns(_ runs: RenewalRuns) {
        renewalRuns.append(runs)
    }

    mutating func usage(_ facts: UsageFacts, at offset: Int) throws(CodecError) {
        usages.append(facts)
    }

    mutating func operatorRecord(_ record: OperatorRecord, at offset: Int) throws(CodecError) {
        operatorRecords.append(record)
    }
}

extension ReportedAnswer {
    /// What the change feed reports of `state` at `at` under `rules`: equal to the
    /// answer of ``Evaluation/evaluate(_:rules:at:)``'s view, worked out from the
    /// entitlements alone (no subscription, purchase or balance is built).
    public init(evaluating state: __shared CustomerState, rules: Rules, at: Int64) {
        var parts: Evaluation.ViewParts? = nil
        let ledger = Evaluation.ledger(
            transactions: state.transactions.values.lazy.map(\.facts),
            renewalInfo: { otid in
                // The standing version alone: the runs up to it feed only the view.
                guard let versions = state.renewalInfos[otid], let standing = SubscriptionEvaluation.standingIndex(in: versions, at: at)
                else { return nil }
                return (versions[standing].facts, RenewalRuns())
            },
            usages: state.usages.values, consentRescindedAt: state.consentRescindedAt,
            operatorRecords: state.operatorRecords.values, rules: rules, at: at, parts: &parts)
        self = ledger.reportedAnswer()
    }
}

extension CustomerState {
    /// The state evaluated under `rules` at `at` (see ``Evaluation/evaluate(_:rules:at:)``).
    public func evaluated(rules: Rules, at: Int64) -> CustomerView {
        Evaluation.evaluate(self, rules: rules, at: at)
    }
}

extension TransactionFacts {
    /// Whether the transaction's revocation had happened by `at`.
    public func isRevoked(at: Int64) -> Bool {
        guard let revocationDate else { return false }
        return revocationDate <= at
    }

    /// How much of the transaction is taken back at `at`.
    func revocationShare(at: Int64) -> RevocationShare {
        guard isRevoked(at: at) else { return .none }
        switch revocationType {
        case nil, .refundFull?, .familyRevoke?:
            return .all
        case .refundProrated?:
            // A prorated refund that does not say how much is taken as a full one.
            guard let percentage = revocationPercentage else { return .all }
            return .prorated(min(max(percentage, 0), RevocationShare.whole))
        case .unknown?:
            // A revocation type Apple adds later: revoked, so nothing is left.
            return .all
        }
    }
}

/// How much of a purchase a revocation takes back.
enum RevocationShare: Hashable {
    /// Not revoked (or not yet at the moment evaluated).
    case none
    /// All of it: REFUND_FULL, FAMILY_REVOKE, or no `revocationType`.
    case all
    /// REFUND_PRORATED: this many thousandths of a percent (0...100000).
    case prorated(Int64)

    /// 100%, in thousandths of a percent.
    static let whole: Int64 = 100_000
}

/// How long an entitlement source grants.
enum GrantExpiry: Hashable {
    /// Until this moment (exclusive).
    case until(Int64)
    /// With no end: a non-consumable.
    case forever

    /// The later of two expiries (`forever` is later than any moment).
    func later(_ other: GrantExpiry) -> GrantExpiry {
        switch (self, other) {
        case (.forever, _), (_, .forever): return .forever
        case (.until(let lhs), .until(let rhs)): return .until(max(lhs, rhs))
        }
    }
}

/// The latest expiry among an entitlement's granting sources, and the product
/// of the source that sets it.
struct Grant: Hashable {
    var expiry: GrantExpiry
    var productId: String
    /// The operator's grant that is the source (specification section 13); `nil` for a purchase.
    var grantId: String? = nil

    /// The later of two grants; between equal expiries a purchase before an
    /// operator's grant, then the smaller `productId` (or grant id).
    func later(_ other: Grant) -> Grant {
        switch (expiry, other.expiry) {
        case (.forever, .until): return self
        case (.until, .forever): return other
        case (.forever, .forever): return other.tiePrecedes(self) ? other : self
        case (.until(let lhs), .until(let rhs)):
            if lhs != rhs { return lhs > rhs ? self : other }
            return other.tiePrecedes(self) ? other : self
        }
    }

    /// Between sources of equal expiry: purchases first, then by `productId`, then by grant id.
    private func tiePrecedes(_ other: Grant) -> Bool {
        switch (grantId, other.grantId) {
        case (nil, _?): return true
        case (_?, nil): return false
        case (let lhs?, let rhs?): return lhs.utf8Precedes(rhs)
        case (nil, nil): return productId.utf8Precedes(other.productId)
        }
    }
}

/// Collects the entitlements counted purchases map to, and what grants them.
struct EntitlementLedger {
    /// Mentioned entitlements, each once, in the order first mentioned; `grant` is the
    /// latest grant among granting sources, `nil` if none grants. A customer's purchases
    /// name a few entitlements: a list searched in place costs less than a table's
    /// hashing, and is made without one.
    private var entries: [(name: String, grant: Grant?)] = []

    /// The position of `name` in ``entries``, if mentioned.
    private func position(of name: String) -> Int? {
        entries.firstIndex { $0.name == name }
    }

    mutating func mention(_ names: [String]) {
        for name in names where position(of: name) == nil { entries.append((name, nil)) }
    }

    /// Whether purchases grant: not once a rescinded consent under
    /// `consentRescindedRevokesAccess` has ended access (an operator's grant still does).
    var purchasesGrant = true

    mutating func grant(_ names: [String], _ expiry: GrantExpiry, product: String) {
        guard purchasesGrant else { return }
        record(names, Grant(expiry: expiry, productId: product))
    }

    /// An operator's grant of `name` until `until` (exclusive): an operator's decision, not capped by a rescinded consent.
    mutating func grant(_ name: String, until: Int64, grantId: String) {
        record([name], Grant(expiry: .until(until), productId: "", grantId: grantId))
    }

    private mutating func record(_ names: [String], _ incoming: Grant) {
        for name in names {
            guard let index = position(of: name) else {
                entries.append((name, incoming))
                continue
            }
            entries[index].grant = entries[index].grant.map { $0.later(incoming) } ?? incoming
        }
    }

    /// The entitlements of `transaction`'s Advanced Commerce items (``Rules/skus``)
    /// for as long as the transaction grants, each until its own `revocationDate`.
    /// An item without a SKU, or with one the rules do not name, grants nothing.
    mutating func grantItems(of transaction: TransactionFacts, _ expiry: GrantExpiry, rules: Rules, at: Int64) {
        guard let items = transaction.extensions?.items, !rules.skus.isEmpty else { return }
        for item in items {
            guard let sku = item.sku, let rule = rules.skus[sku] else { continue }
            if let revoked = item.revocationDate, revoked <= at { continue }
            grant(rule.entitlements, expiry, product: transaction.productId)
        }
    }

    /// The active entitlements and their ends, as ``ReportedAnswer/init(_:)`` reads them from ``views()``.
    func reportedAnswer() -> ReportedAnswer {
        var active: [String: Int64?] = [:]
        for (name, grant) in entries {
            switch grant?.expiry {
            case nil: continue
            case .forever?: active[name] = .some(nil)
            case .until(let date)?: active[name] = .some(date)
            }
        }
        return ReportedAnswer(active: active)
    }

    func views() -> [EntitlementView] {
        entries.map { name, grant in
            switch grant?.expiry {
            case nil: return EntitlementView(name: name, active: false, expiresDate: nil)
            case .forever?:
                return EntitlementView(
                    name: name, active: true, expiresDate: nil, productId: grant?.grantId == nil ? grant?.productId : nil,
                    grantId: grant?.grantId)
            case .until(let date)?:
                return EntitlementView(
                    name: name, active: true, expiresDate: date, productId: grant?.grantId == nil ? grant?.productId : nil,
                    grantId: grant?.grantId)
            }
        }
        .sorted { $0.name.utf8Precedes($1.name) }
    }
}
