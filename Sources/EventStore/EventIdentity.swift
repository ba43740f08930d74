import EntitlementCore

/// How the log recognizes the same input arriving twice (contract section 3).
public enum EventIdentity {
    /// The idempotency key of a verified input.
    public static func identity(of input: VerifiedInput) -> String {
        switch input {
        case .notification(let n): return "notification:" + n.payload.notificationUUID
        case .transaction(let t): return "transaction:\(t.payload.transactionId):\(t.payload.signedDate)"
        case .renewalInfo(let r): return "renewalInfo:\(r.payload.originalTransactionId):\(r.payload.signedDate)"
        case .appTransaction(let a):
            return "appTransaction:\(a.payload.appTransactionId ?? a.payload.bundleId):\(a.payload.receiptCreationDate)"
        }
    }

    /// What `ingest` reports as `eventId`: the notificationUUID, the
    /// transactionId, the renewal info's originalTransactionId, or the appTransactionId.
    public static func eventId(of input: VerifiedInput) -> String {
        switch input {
        case .notification(let n): return n.payload.notificationUUID
        case .transaction(let t): return t.payload.transactionId
        case .renewalInfo(let r): return r.payload.originalTransactionId
        case .appTransaction(let a): return a.payload.appTransactionId ?? a.payload.bundleId
        }
    }
}
