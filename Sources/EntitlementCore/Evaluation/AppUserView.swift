/// What an app user (the team's own account id) can use at a moment: the answer
/// to `query --app-user-id` (specification section 13). Its customers are the App
/// Store customers linked to it; its own grants and credits were given to the app
/// user itself.
public struct AppUserView: Sendable, Hashable {
    public var appUserId: String
    /// The moment evaluated, in milliseconds since 1970.
    public var at: Int64
    /// The union of its customers' entitlements and its own grants, sorted by name.
    public var entitlements: [EntitlementView]
    /// Each linked customer's view, sorted by `appTransactionId`.
    public var customers: [CustomerView]
    /// Every operator's grant given to it or to its customers.
    public var grants: [GrantView]
    /// Its customers' balances and its own credits, summed, sorted by currency.
    public var balances: [CurrencyBalance]

    /// The view of `appUserId` from its own state's view (`own`, `nil` when nothing was
    /// given to the app user itself) and its customers' states, each with its view.
    public static func make(
        appUserId: String, at: Int64, own: (state: CustomerState, view: CustomerView)?,
        customers: [(state: CustomerState, view: CustomerView)]
    ) -> AppUserView {
        let customers = customers.sorted { $0.view.appTransactionId.utf8Precedes($1.view.appTransactionId) }
        let views = customers.map(\.view) + (own.map { [$0.view] } ?? [])
        var grants: [GrantView] = []
        if let own {
            grants += own.state.operatorGrants.map { GrantView(grant: $0, appTransactionId: nil, at: at) }
        }
        for customer in customers {
            grants += customer.state.operatorGrants.map {
                GrantView(grant: $0, appTransactionId: customer.view.appTransactionId, at: at)
            }
        }
        return AppUserView(
            appUserId: appUserId, at: at, entitlements: AccountView.mergeEntitlements(views), customers: customers.map(\.view),
            grants: grants,
            balances: summedBalances(views))
    }

    /// The balances of `views` summed by currency, sorted by currency: summed exactly, then
    /// clamped to 64 bits as one customer's balance is, never wrapped.
    public static func summedBalances(_ views: [CustomerView]) -> [CurrencyBalance] {
        var totals = BalanceSheet()
        for view in views {
            for balance in view.balances { totals.add(balance) }
        }
        return totals.balances()
    }

    /// `{"appUserId", "at", "entitlements", "customers": [query objects], "grants", "balances"}`.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("appUserId", .string(appUserId)),
                ("at", .int(at)),
                ("entitlements", EntitlementView.json(entitlements)),
                ("customers", .array(customers.map { $0.json() })),
                ("grants", .array(grants.map { $0.json() })),
                ("balances", .object(JSONObject(balances.map { ($0.currency, .int($0.amount)) }))),
            ]))
    }
}

/// One operator's grant as an app user's view lists it.
public struct GrantView: Sendable, Hashable {
    public var grant: OperatorGrant
    /// The customer it was given to; `nil` when given to the app user itself.
    public var appTransactionId: CustomerKey?
    /// Whether it grants at the moment evaluated.
    public var active: Bool

    public init(grant: OperatorGrant, appTransactionId: CustomerKey?, at: Int64) {
        self.grant = grant
        self.appTransactionId = appTransactionId
        self.active = grant.isActive(at: at)
    }

    /// `{"grantId", "entitlement", "from", "until", "revokedAt", "active", "appTransactionId", "operator", "reason"}`.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("grantId", .string(grant.id)),
                ("entitlement", .string(grant.entitlement)),
                ("from", .int(grant.from)),
                ("until", .int(grant.until)),
                ("revokedAt", .nullable(grant.revokedAt)),
                ("active", .bool(active)),
                ("appTransactionId", .nullable(appTransactionId)),
                ("operator", .nullable(grant.record.operatorName)),
                ("reason", .nullable(grant.record.reason)),
            ]))
    }
}
