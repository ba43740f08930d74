public import EntitlementCore

/// Verifies App Store signed data (JWS compact, ES256, `x5c` chain) and decodes it.
///
/// Configured once with an app, an environment and trusted roots, a verifier is then a pure
/// function of its input: validity of the certificates is checked at the payload's own
/// `signedDate` (`receiptCreationDate` for an AppTransaction), as Apple's libraries do with
/// online checks off, so the same JWS gives the same answer today and in ten years.
///
/// Each JWS goes through, in order:
/// 1. compact form: three `.`-separated base64url segments and a JSON object header (else
///    `MALFORMED_INPUT`); `alg` `ES256` and an `x5c` array (else `VERIFICATION_FAILURE`) of
///    exactly three certificates (else `INVALID_CHAIN_LENGTH`), each standard base64 of a DER
///    certificate (else `INVALID_CERTIFICATE`);
/// 2. the ES256 signature (raw 64-byte `r || s`) over `header.payload` with the leaf's P-256
///    key (else `VERIFICATION_FAILURE`): checked before anything in the payload is read, so an
///    altered payload or signature is always `VERIFICATION_FAILURE`;
/// 3. the payload: base64url JSON with its signing time (else `MALFORMED_INPUT`);
/// 4. the chain, by OpenSSL's path validation (strict mode) against the configured roots only,
///    at the signing time; `x5c[2]` must be the root the chain reaches, byte for byte; the leaf
///    must carry OID 1.2.840.113635.100.6.11.1 and the intermediate 1.2.840.113635.100.6.2.1
///    (else `INVALID_CHAIN`);
/// 5. the payload decoded as its App Store type (else `MALFORMED_INPUT`), then `bundleId` and,
///    in Production, `appAppleId` (else `INVALID_APP_IDENTIFIER`), then the environment
///    (else `INVALID_ENVIRONMENT`).
///
/// With environment ``AppStoreEnvironment/xcode`` or ``AppStoreEnvironment/localTesting``
/// configured, steps 1 (beyond the compact form and a JSON header), 2 and 4 are skipped.
///
/// Verified chains are cached (see ``VerifierConfiguration/chainCacheCapacity``), so a known
/// chain costs one P-256 verification per JWS. The verifier is `Sendable` and may be used from
/// any number of threads.
public struct SignedDataVerifier: Sendable {
    /// The configuration this verifier was made with.
    public let configuration: VerifierConfiguration
    let trust: TrustStore?

    /// Whether this verifier checks signatures and chains (all but Xcode and LocalTesting
    /// data). When it does, a JWS it accepts holds base64url and its two dots alone: every
    /// byte was decoded strictly, or compared with a header that was.
    package var checksSignatures: Bool { trust != nil }
    let cache: ChainCache
    /// Batches of put-off checks for one JWS and those it nests (``verifyNotification(_:)``).
    package let deferredPool = DeferredSignatures.Pool()

    /// Makes a verifier.
    /// - Throws: `INVALID_APP_IDENTIFIER` when the environment is Production and `appAppleId`
    ///   is missing; `INVALID_CERTIFICATE` when a trusted root does not parse or, outside
    ///   Xcode/LocalTesting, no root is configured.
    public init(configuration: VerifierConfiguration) throws(VerificationError) {
        OpenSSLAtExit.keepStateUntilTheEnd()
        if configuration.environments.contains(.production) && configuration.appAppleId == nil {
            throw VerificationError(.invalidAppIdentifier, "appAppleId is required when the environment is Production")
        }
        if Set(configuration.environments.map(\.isLocal)).count > 1 {
            throw VerificationError(
                .invalidEnvironment,
                "Xcode and LocalTesting (unsigned data) cannot be combined with Production or Sandbox (signed data)")
        }
        if configuration.environment.isLocal {
            trust = nil
        } else {
            guard !configuration.trustedRootsDER.isEmpty else {
                throw .invalidCertificate("no trusted root certificate is configured")
            }
            trust = try TrustStore(rootsDER: configuration.trustedRootsDER)
        }
        self.configuration = configuration
        self.cache = ChainCache(capacity: configuration.chainCacheCapacity)
    }

    /// Verifies a notification's `signedPayload` and every JWS nested in it
    /// (`data.signedTransactionInfo`, `data.signedRenewalInfo`, `appData.signedAppTransactionInfo`).
    ///
    /// - Throws: ``VerificationError``; a nested JWS that fails fails the whole notification,
    ///   with the nested error's code and a message naming the nested field.
    public func verifyNotification(_ jws: String) throws(VerificationError) -> SignedNotification {
        if let verified = checkedTogether({ deferred throws(VerificationError) in try verifyNotification(jws, deferring: deferred) }) {
            return verified
        }
        return try verifyNotification(jws, deferring: nil)
    }

    /// Verifies a `signedTransactionInfo` (from a notification, the App Store Server API or a device).
    public func verifyTransaction(_ jws: String) throws(VerificationError) -> SignedTransaction {
        try verifyTransaction(jws, deferring: nil)
    }

    /// Verifies a `signedRenewalInfo`.
    public func verifyRenewalInfo(_ jws: String) throws(VerificationError) -> SignedRenewalInfo {
        try verifyRenewalInfo(jws, deferring: nil)
    }

    /// Verifies a signed AppTransaction: its validation time is `receiptCreationDate`, its
    /// environment `receiptType`.
    public func verifyAppTransaction(_ jws: String) throws(VerificationError) -> SignedAppTransaction {
        try verifyAppTransaction(jws, deferring: nil)
    }

    /// Verifies a bare JWS of any of the four kinds, told apart by its payload: with
    /// `notificationType` a notification; with `receiptType` an AppTransaction; with
    /// `transactionId` a transaction; with `originalTransactionId` only, renewal info.
    ///
    /// - Throws: ``VerificationError``; `MALFORMED_INPUT` when the payload is none of these.
    public func verify(_ jws: String) throws(VerificationError) -> VerifiedInput {
        if let verified = checkedTogether({ deferred throws(VerificationError) in try verify(jws, deferring: deferred) }) {
            return verified
        }
        return try verify(jws, deferring: nil)
    }

    /// `verify` with the signature checks that keys' tables make put off and then made at
    /// once (a notification's three: one modular inversion instead of three); `nil` when it
    /// threw or a check failed: the caller then verifies again checking each at once, so
    /// that what it reports is exactly what that reports.
    private func checkedTogether<T>(_ verify: (DeferredSignatures) throws(VerificationError) -> T) -> T? {
        guard checksSignatures else { return nil }
        let deferred = deferredPool.borrow()
        defer { deferredPool.giveBack(deferred) }
        let verified: T
        do {
            verified = try verify(deferred)
        } catch {
            deferred.truncate(to: 0)
            return nil
        }
        return deferred.check().contains(false) ? nil : verified
    }

    // The same, with the signature checks that a key's table makes put off to `deferred`
    // (``DeferredSignatures``): a result is then verified only once `deferred.check()`
    // passed every check it recorded.

    package func verifyNotification(_ jws: String, deferring deferred: DeferredSignatures?) throws(VerificationError) -> SignedNotification {
        let opened = try open(jws, as: .notification, deferring: deferred)
        return try notification(jws: jws, opened, deferring: deferred)
    }

    package func verifyTransaction(_ jws: String, deferring deferred: DeferredSignatures?) throws(VerificationError) -> SignedTransaction {
        let opened = try open(jws, as: .transaction, deferring: deferred)
        return try transaction(jws: jws, opened)
    }

    package func verifyRenewalInfo(_ jws: String, deferring deferred: DeferredSignatures?) throws(VerificationError) -> SignedRenewalInfo {
        let opened = try open(jws, as: .renewalInfo, deferring: deferred)
        return try renewalInfo(jws: jws, opened)
    }

    package func verifyAppTransaction(
        _ jws: String, deferring deferred: DeferredSignatures?
    ) throws(VerificationError) -> SignedAppTransaction {
        let opened = try open(jws, as: .appTransaction, deferring: deferred)
        return try appTransaction(jws: jws, opened)
    }

    package func verify(_ jws: String, deferring deferred: DeferredSignatures?) throws(VerificationError) -> VerifiedInput {
        let opened = try open(jws, as: nil, deferring: deferred)
        switch opened.kind {
        case .notification: return .notification(try notification(jws: jws, opened, deferring: deferred))
        case .transaction: return .transaction(try transaction(jws: jws, opened))
        case .renewalInfo: return .renewalInfo(try renewalInfo(jws: jws, opened))
        case .appTransaction: return .appTransaction(try appTransaction(jws: jws, opened))
        case .receipt: throw .malformed("an app receipt is not a JWS")
        }
    }

    /// How many verified certificate chains the cache holds.
    public var cachedChainCount: Int { cache.count }

    /// How many cached chains' keys check signatures with a table of their multiples
    /// (``VerifierConfiguration/keyTableAfter``).
    public var keyTableCount: Int { cache.keyTableCount }
}
