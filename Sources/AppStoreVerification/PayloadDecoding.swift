internal import EntitlementCore

extension SignedDataVerifier {
    /// The verified transaction from its opened JWS: its payload decoded as that kind, checked, with the bytes as signed.
    func transaction(jws: String, _ opened: OpenedJWS) throws(VerificationError) -> SignedTransaction {
        let json = opened.payload
        let payload: TransactionPayload
        do { payload = try TransactionPayload(json: json) } catch { throw .malformed("transaction payload: \(error)") }
        try checkAppTransactionId(json["appTransactionId"], field: "appTransactionId")
        try checkBundleId(payload.bundleId)
        try checkEnvironment(payload.environment, field: "environment")
        return SignedTransaction(jws: jws, payload: payload, signedBytes: opened.bytes)
    }

    /// The verified renewal info from its opened JWS: its payload decoded as that kind, checked, with the bytes as signed.
    func renewalInfo(jws: String, _ opened: OpenedJWS) throws(VerificationError) -> SignedRenewalInfo {
        let json = opened.payload
        let payload: RenewalInfoPayload
        do { payload = try RenewalInfoPayload(json: json) } catch { throw .malformed("renewal info payload: \(error)") }
        try checkAppTransactionId(json["appTransactionId"], field: "appTransactionId")
        // Renewal info carries no bundleId in Apple's schema; check it if it ever does.
        if case .string(let bundleId)? = json["bundleId"] { try checkBundleId(bundleId) }
        try checkEnvironment(payload.environment, field: "environment")
        return SignedRenewalInfo(jws: jws, payload: payload, signedBytes: opened.bytes)
    }

    /// The verified AppTransaction from its opened JWS: its payload decoded as that kind, checked, with the bytes as signed.
    func appTransaction(jws: String, _ opened: OpenedJWS) throws(VerificationError) -> SignedAppTransaction {
        let json = opened.payload
        let payload: AppTransactionPayload
        do { payload = try AppTransactionPayload(json: json) } catch { throw .malformed("AppTransaction payload: \(error)") }
        try checkAppTransactionId(json["appTransactionId"], field: "appTransactionId")
        try checkBundleId(payload.bundleId)
        try checkAppAppleId(payload.appAppleId, environment: payload.receiptType)
        try checkEnvironment(payload.receiptType, field: "receiptType")
        return SignedAppTransaction(jws: jws, payload: payload, signedBytes: opened.bytes)
    }

    /// The verified notification from its opened JWS: its payload decoded as that kind, checked, with the bytes as signed.
    func notification(jws: String, _ opened: OpenedJWS, deferring deferred: DeferredSignatures?) throws(VerificationError) -> SignedNotification {
        let json = opened.payload
        let payload: NotificationPayload
        do { payload = try NotificationPayload(json: json) } catch { throw .malformed("notification payload: \(error)") }
        try checkAppTransactionId(json["data"]?["appTransactionId"], field: "data.appTransactionId")
        try checkNotificationIdentity(payload)

        var transaction: SignedTransaction? = nil
        var renewalInfo: SignedRenewalInfo? = nil
        var appTransaction: SignedAppTransaction? = nil
        if let nested = payload.data?.signedTransactionInfo {
            do { transaction = try verifyTransaction(nested, deferring: deferred) } catch { throw error.prefixed("data.signedTransactionInfo") }
        }
        if let nested = payload.data?.signedRenewalInfo {
            do { renewalInfo = try verifyRenewalInfo(nested, deferring: deferred) } catch { throw error.prefixed("data.signedRenewalInfo") }
        }
        if let nested = payload.appData?.signedAppTransactionInfo {
            do { appTransaction = try verifyAppTransaction(nested, deferring: deferred) } catch {
                throw error.prefixed("appData.signedAppTransactionInfo")
            }
        }
        return SignedNotification(
            jws: jws, payload: payload, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction,
            signedBytes: opened.bytes)
    }
}

extension SignedDataVerifier {
    /// An `appTransactionId`, where a payload carries one, is what keys the
    /// customer (specification section 5): Apple's are decimal digits. An empty or
    /// non-digit one is `MALFORMED_INPUT` rather than a customer of its own
    /// (it could otherwise pose as another key, such as an `otid:` alias).
    func checkAppTransactionId(_ value: JSONValue?, field: String) throws(VerificationError) {
        switch value {
        case nil, .null?: return
        case .string(let id)?:
            guard !id.isEmpty else {
                throw .malformed("\(field) is empty: an appTransactionId is Apple's decimal number; leave the field out when there is none")
            }
            guard id.utf8.count <= 64, id.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw .malformed("\(field) \"\(id.prefix(64))\" is not a decimal number: Apple's appTransactionId is digits only")
            }
        case let other?:
            throw .malformed("\(field) must be a string of digits, found \(other.typeName)")
        }
    }
}
