/// What an `appAccountToken` can use at a moment: the entitlements of every
/// customer (`appTransactionId`) that carries the token, merged (the
/// `query --app-account-token` output of specification section 6).
public struct AccountView: Sendable, Hashable {
    /// The token queried.
    public var appAccountToken: String
    /// The moment evaluated, in milliseconds since 1970.
    public var at: Int64
    /// The customers merged, sorted.
    public var appTransactionIds: [CustomerKey]
    /// The merged entitlements, sorted by name.
    public var entitlements: [EntitlementView]

    /// A merged view with exactly these fields (see ``merge(token:at:views:)``).
    public init(appAccountToken: String, at: Int64, appTransactionIds: [CustomerKey], entitlements: [EntitlementView]) {
        self.appAccountToken = appAccountToken
        self.at = at
        self.appTransactionIds = appTransactionIds
        self.entitlements = entitlements
    }

    /// Merges the views of the customers carrying `token`.
    ///
    /// An entitlement is listed when any view lists it, active when any view
    /// has it active; its `expiresDate` is the latest among the views where it
    /// is active, `nil` (no end) when a non-consumable grants it in any of
    /// them, and `nil` when it is active in none.
    public static func merge(token: String, at: Int64, views: [CustomerView]) -> AccountView {
        let ids = Set(views.map(\.appTransactionId)).sorted { $0.utf8Precedes($1) }
        return AccountView(appAccountToken: token, at: at, appTransactionIds: ids, entitlements: mergeEntitlements(views))
    }

    /// The entitlements of `views` merged: listed when any view lists it, active when
    /// any has it active, with the latest `expiresDate` among those (no end when a
    /// non-consumable grants it in any), and the source that sets it (a purchase
    /// before an operator's grant on a tie).
    public static func mergeEntitlements(_ views: [CustomerView]) -> [EntitlementView] {
        var merged: [String: Grant?] = [:]
        for view in views {
            for entitlement in view.entitlements {
                let grant: Grant? =
                    entitlement.active
                    ? Grant(
                        expiry: entitlement.expiresDate.map(GrantExpiry.until) ?? .forever, productId: entitlement.productId ?? "",
                        grantId: entitlement.grantId)
                    : nil
                switch (merged[entitlement.name] ?? nil, grant) {
                case (let existing?, let incoming?): merged[entitlement.name] = .some(existing.later(incoming))
                case (nil, let incoming?): merged[entitlement.name] = .some(incoming)
                case (_, nil): if merged[entitlement.name] == nil { merged[entitlement.name] = .some(nil) }
                }
            }
        }
        return merged.map { name, grant in
            guard let grant else { return EntitlementView(name: name, active: false, expiresDate: nil) }
            let productId = grant.grantId == nil ? grant.productId : nil
            switch grant.expiry {
            case .forever: return EntitlementView(name: name, active: true, expiresDate: nil, productId: productId, grantId: grant.grantId)
            case .until(let date):
                return EntitlementView(name: name, active: true, expiresDate: date, productId: productId, grantId: grant.grantId)
            }
        }
        .sorted { $0.name.utf8Precedes($1.name) }
    }

    /// The names of the entitlements active at ``at``, sorted.
    public var activeEntitlements: [String] {
        entitlements.filter(\.active).map(\.name)
    }

    /// `{"appAccountToken": ..., "at": ..., "appTransactionIds": [...], "entitlements": {...}}`.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("appAccountToken", .string(appAccountToken)),
                ("at", .int(at)),
                ("appTransactionIds", .array(appTransactionIds.map(JSONValue.string))),
                ("entitlements", EntitlementView.json(entitlements)),
            ]))
    }
}
