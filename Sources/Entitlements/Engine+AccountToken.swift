internal import EventStore
import EntitlementCore

extension Engine {
    /// The customers whose account token is `token` (compared case-insensitively): the
    /// `appAccountToken` of their latest-signed transaction or renewal info carrying one
    /// (specification section 5). A customer whose data carried `token` before another
    /// token is not one of them.
    static func accountTokenCustomers(_ token: String, store: EventStore) throws(StoreError) -> [CustomerKey] {
        let wanted = token.lowercased()
        var keys: [CustomerKey] = []
        for candidate in try store.customers(appAccountToken: wanted) {
            let key = try store.resolveCustomer(candidate)
            guard !keys.contains(key), let state = try store.projection(of: key)?.state,
                state.accountToken?.token.lowercased() == wanted
            else { continue }
            keys.append(key)
        }
        return keys
    }
}
