extension VerifiedInput {
    /// The decoded payload, with a notification's nested JWS replaced in place
    /// by their decoded payloads: what `verify` prints and what the log keeps
    /// beside the raw JWS.
    public var decodedJSON: JSONValue {
        switch self {
        case .notification(let n):
            guard case .object(var root) = n.payload.json else { return n.payload.json }
            if case .object(var data)? = root["data"] {
                if let t = n.transaction { data["signedTransactionInfo"] = t.payload.json }
                if let r = n.renewalInfo { data["signedRenewalInfo"] = r.payload.json }
                root["data"] = .object(data)
            }
            if case .object(var app)? = root["appData"], let a = n.appTransaction {
                app["signedAppTransactionInfo"] = a.payload.json
                root["appData"] = .object(app)
            }
            return .object(root)
        case .transaction(let t): return t.payload.json
        case .renewalInfo(let r): return r.payload.json
        case .appTransaction(let a): return a.payload.json
        case .receipt(let r): return r.receipt.payload.json
        }
    }
}
