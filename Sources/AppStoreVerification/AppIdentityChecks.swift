internal import EntitlementCore

/// Step 5: the payload must be about the configured app, in the configured environment.
extension SignedDataVerifier {
    func checkBundleId(_ bundleId: String?) throws(VerificationError) {
        guard bundleId == configuration.bundleId else {
            throw VerificationError(
                .invalidAppIdentifier,
                bundleId.map { "bundleId \($0) does not match the configured \(configuration.bundleId)" }
                    ?? "the payload carries no bundleId; the configured one is \(configuration.bundleId)")
        }
    }

    /// In Production, `appAppleId` must be the configured one (Apple checks it only there):
    /// when Production is the only accepted environment, or the payload says Production.
    func checkAppAppleId(_ appAppleId: Int64?, environment: String?) throws(VerificationError) {
        let production = configuration.environments.contains(.production)
            && (configuration.environments.count == 1 || environment == AppStoreEnvironment.production.rawValue)
        guard production, appAppleId != configuration.appAppleId else { return }
        let expected = configuration.appAppleId.map(String.init) ?? "none"
        throw VerificationError(
            .invalidAppIdentifier,
            appAppleId.map { "appAppleId \($0) does not match the configured \(expected)" }
                ?? "the payload carries no appAppleId; Production requires the configured \(expected)")
    }

    func checkEnvironment(_ environment: String?, field: String) throws(VerificationError) {
        guard let environment, configuration.environments.contains(where: { $0.rawValue == environment }) else {
            let configured = configuration.environments.map(\.rawValue).joined(separator: ", ")
            throw VerificationError(
                .invalidEnvironment,
                environment.map { "\(field) \($0) does not match the configured \(configured)" }
                    ?? "the payload carries no \(field); the configured environment is \(configured)")
        }
    }

    /// A notification names its app and environment in `data`, else `summary`, else `appData`,
    /// else `externalPurchaseToken` (whose environment is Sandbox when `externalPurchaseId`
    /// starts with `SANDBOX`, else Production), as Apple's libraries read it.
    func checkNotificationIdentity(_ notification: NotificationPayload) throws(VerificationError) {
        let bundleId: String?
        let appAppleId: Int64?
        let environment: String?
        if let data = notification.data {
            (bundleId, appAppleId, environment) = (data.bundleId, data.appAppleId, data.environment)
        } else if let summary = notification.summary {
            (bundleId, appAppleId, environment) = (summary.bundleId, summary.appAppleId, summary.environment)
        } else if let appData = notification.appData {
            (bundleId, appAppleId, environment) = (appData.bundleId, appData.appAppleId, appData.environment)
        } else if let token = notification.externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            (bundleId, appAppleId, environment) = (
                token.bundleId, token.appAppleId,
                sandbox ? AppStoreEnvironment.sandbox.rawValue : AppStoreEnvironment.production.rawValue
            )
        } else {
            (bundleId, appAppleId, environment) = (nil, nil, nil)
        }
        try checkBundleId(bundleId)
        try checkAppAppleId(appAppleId, environment: environment)
        try checkEnvironment(environment, field: "environment")
    }
}
