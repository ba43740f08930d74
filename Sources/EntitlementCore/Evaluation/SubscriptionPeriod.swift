/// What picks a subscription's current transaction among its periods
/// (``SubscriptionEvaluation/currentIndex(among:idPrecedes:)``), beside the
/// `transactionId` that breaks ties: a transaction's whole facts, or only the
/// head read of a stored one (``TransactionHead``).
protocol SubscriptionPeriod {
    var purchaseDate: Int64 { get }
    var expiresDate: Int64? { get }
    var isUpgraded: Bool { get }
}

extension TransactionFacts: SubscriptionPeriod {}
