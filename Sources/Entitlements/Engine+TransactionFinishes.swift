import EntitlementCore
internal import EventStore
import Foundation

extension Engine {
    /// Whether the engine queues Finish Transaction calls (`appStoreServerAPI.finishTransactions`).
    public var finishesTransactions: Bool { configuration.appStoreServerAPI?.finishTransactions == true }

    /// The transactions of `items` whose outcome is `appended` and that grant something:
    /// an auto-renewable, non-consumable or non-renewing product the rules give
    /// entitlements, or a consumable worth units (one of its productId's currency when the
    /// rules do not name it); revoked transactions and unsigned environments excluded.
    static func finishCandidates(_ items: [AppendItem], _ outcomes: [AppendOutcome], rules: Rules) -> [EventStore.FinishCandidate] {
        var candidates: [EventStore.FinishCandidate] = []
        for (item, outcome) in zip(items, outcomes) {
            guard case .verified(let input) = item, case .appended(_, _, _, let seq) = outcome else { continue }
            let transaction: TransactionPayload?
            switch input {
            case .transaction(let signed): transaction = signed.payload
            case .notification(let signed): transaction = signed.transaction?.payload
            case .renewalInfo, .appTransaction, .receipt: transaction = nil
            }
            guard let transaction, transaction.revocationDate == nil, grants(transaction, rules: rules),
                transaction.environment == AppStoreEnvironment.production.rawValue || transaction.environment == AppStoreEnvironment.sandbox.rawValue
            else { continue }
            candidates.append(.init(transactionId: transaction.transactionId, environment: transaction.environment, seq: seq))
        }
        return candidates
    }

    /// Whether `transaction`'s product grants an entitlement or units under `rules`.
    static func grants(_ transaction: TransactionPayload, rules: Rules) -> Bool {
        let rule = rules.products[transaction.productId]
        // An Advanced Commerce purchase grants through its items' SKUs (rules.skus).
        if let items = transaction.advancedCommerceInfo?.items,
            items.contains(where: { item in item.sku.map { !(rules.skus[$0]?.entitlements.isEmpty ?? true) } ?? false }) {
            return true
        }
        switch transaction.type {
        case .consumable:
            if let rule, !rule.entitlements.isEmpty { return true }
            return transaction.quantity * (rule?.units ?? 1) > 0
        case .autoRenewable, .nonConsumable, .nonRenewing, .unknown:
            return !(rule?.entitlements.isEmpty ?? true)
        }
    }
}
