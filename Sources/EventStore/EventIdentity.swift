import EntitlementCore

/// How the log recognizes the same input arriving twice (specification section 3).
public enum EventIdentity {
    /// The idempotency key of a verified input.
    ///
    /// A notification is its `notificationUUID`. A standalone transaction or
    /// renewal info is its kind, id, `signedDate` and a SHA-256 of its signed
    /// payload (the JWS's middle segment): two different versions signed in the
    /// same millisecond are two events (section 5 orders them by raw JWS), while
    /// the same payload under another signature encoding is the same event. An
    /// AppTransaction is its appTransactionId (else bundleId), `receiptCreationDate`
    /// and the same digest.
    /// - Parameter hash: SHA-256, supplied by the store's caller.
    public static func identity(of input: VerifiedInput, hash: EventStore.HashFunction) -> String {
        switch input {
        case .notification(let n): return "notification:" + n.payload.notificationUUID
        case .transaction(let t):
            return "transaction:\(t.payload.transactionId):\(t.payload.signedDate):" + payloadDigest(t.jws, hash: hash)
        case .renewalInfo(let r):
            return "renewalInfo:\(r.payload.originalTransactionId):\(r.payload.signedDate):" + payloadDigest(r.jws, hash: hash)
        case .appTransaction(let a):
            return "appTransaction:\(a.payload.appTransactionId ?? a.payload.bundleId):\(a.payload.receiptCreationDate):"
                + payloadDigest(a.jws, hash: hash)
        case .receipt(let r):
            // The SHA-256 of the receipt's bytes, and which of its parts.
            return "receipt:\(r.receipt.sha256):\(r.originalTransactionId ?? "")"
        }
    }

    /// The key older databases recorded for a standalone transaction, renewal info
    /// or AppTransaction (without the payload's digest), or `nil` for other kinds:
    /// an input matching it with the same signed payload is a duplicate.
    public static func legacyIdentity(of input: VerifiedInput) -> String? {
        switch input {
        case .transaction(let t): return "transaction:\(t.payload.transactionId):\(t.payload.signedDate)"
        case .renewalInfo(let r): return "renewalInfo:\(r.payload.originalTransactionId):\(r.payload.signedDate)"
        case .appTransaction(let a): return "appTransaction:\(a.payload.appTransactionId ?? a.payload.bundleId):\(a.payload.receiptCreationDate)"
        case .notification, .receipt: return nil
        }
    }

    /// The signed payload of a compact JWS: the text between its two dots.
    public static func payloadSegment(_ jws: String) -> Substring {
        guard let first = jws.firstIndex(of: "."), let last = jws.lastIndex(of: "."), first < last else { return jws[...] }
        return jws[jws.index(after: first)..<last]
    }

    /// The first 16 bytes of SHA-256 of the payload segment, in hex.
    static func payloadDigest(_ jws: String, hash: EventStore.HashFunction) -> String {
        EventStore.hex(Array(hash(Array(payloadSegment(jws).utf8)).prefix(16)))
    }

    /// What `ingest` reports as `eventId`: the notificationUUID, the
    /// transactionId, the renewal info's originalTransactionId, the appTransactionId, or
    /// a receipt's SHA-256.
    public static func eventId(of input: VerifiedInput) -> String {
        switch input {
        case .notification(let n): return n.payload.notificationUUID
        case .transaction(let t): return t.payload.transactionId
        case .renewalInfo(let r): return r.payload.originalTransactionId
        case .appTransaction(let a): return a.payload.appTransactionId ?? a.payload.bundleId
        case .receipt(let r): return r.receipt.sha256
        }
    }
}
