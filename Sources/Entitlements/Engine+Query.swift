import EntitlementCore
internal import EventStore

/// Whom a query asks about.
///
/// Every form answers the whole customer (specification section 5): an
/// `appTransactionId`, or `otid:<X>` (an alias of the appTransactionId X is
/// linked to, once it is); any `originalTransactionId` or `transactionId` of it.
public enum CustomerQuery: Sendable, Hashable {
    case appTransactionId(String)
    case originalTransactionId(String)
    case transactionId(String)
    case appAccountToken(String)
}

/// A query's answer. Encodes exactly the keys and values `entitlements query` prints.
public enum QueryAnswer: Sendable, JSONRepresentable {
    /// One customer's state at the asked time.
    case customer(CustomerView)
    /// Every customer carrying an app account token, entitlements merged.
    case account(AccountView)
    /// Nobody matches.
    case notFound(String)

    /// The specification's JSON for this answer.
    public func json() -> JSONValue {
        switch self {
        case .customer(let view): return view.json()
        case .account(let view): return view.json()
        case .notFound(let message): return ["error": ["code": "NOT_FOUND", "message": .string(message)]]
        }
    }

    /// ``json()`` as compact UTF-8, a customer's written without building a `JSONValue`
    /// (what `serve` sends for every query).
    public func jsonBytes() -> [UInt8] {
        if case .customer(let view) = self { return view.jsonBytes() }
        return JSONWriter.bytes(json())
    }
}

extension Engine {
    /// What the customer may use at `at` (default now), under the database's active rules (``activeRules()``).
    public func query(_ query: CustomerQuery, at: Int64? = nil) throws(EngineError) -> QueryAnswer {
        let at = at ?? Self.now()
        do {
            return try readers.withReader { store throws(StoreError) -> QueryAnswer in
                let rules = try activeRules(store).rules
                func view(of key: CustomerKey, at: Int64, store: EventStore) throws(StoreError) -> CustomerView? {
                    try self.view(of: key, at: at, store: store, rules: rules)
                }
                switch query {
                case .appTransactionId(let id):
                    // What was given to an app user itself answers through `query(appUserId:at:)`, not as a customer.
                    guard OperatorRecord.appUser(ofKey: id) == nil, let view = try view(of: try store.resolveCustomer(id), at: at, store: store) else {
                        return .notFound("no customer has appTransactionId \(id)")
                    }
                    return .customer(view)
                case .originalTransactionId(let otid):
                    if let view = try view(of: try store.resolveCustomer("otid:" + otid), at: at, store: store) {
                        return .customer(view)
                    }
                    return .notFound("no customer holds originalTransactionId \(otid)")
                case .transactionId(let id):
                    guard let key = try store.customer(transactionId: id), let view = try view(of: key, at: at, store: store) else {
                        return .notFound("no customer holds transactionId \(id)")
                    }
                    return .customer(view)
                case .appAccountToken(let token):
                    var views: [CustomerView] = []
                    for key in try Self.accountTokenCustomers(token, store: store) {
                        if let view = try view(of: key, at: at, store: store) { views.append(view) }
                    }
                    guard !views.isEmpty else { return .notFound("no customer's account token is \(token)") }
                    return .account(AccountView.merge(token: token.lowercased(), at: at, views: views))
                }
            }
        } catch {
            throw EngineError(error)
        }
    }

    private func view(of key: CustomerKey, at: Int64, store: EventStore, rules: Rules) throws(StoreError) -> CustomerView? {
        let view = try store.view(of: key, rules: rules, at: at)
        if let view { noteProducts(view, rules: rules) }
        return view
    }

    /// The stored state of a customer (for tools and tests).
    public func state(of key: CustomerKey) throws(EngineError) -> CustomerState? {
        do {
            return try readers.withReader { store throws(StoreError) in try store.projection(of: key)?.state }
        } catch {
            throw EngineError(error)
        }
    }
}
