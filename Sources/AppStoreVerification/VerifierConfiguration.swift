public import EntitlementCore

/// What a ``SignedDataVerifier`` accepts: one app, its environments, and the roots it trusts.
public struct VerifierConfiguration: Sendable {
    /// The app's bundle identifier; every payload must carry exactly this `bundleId`.
    public var bundleId: String
    /// The app's Apple ID. Required in Production, where payloads must carry exactly this
    /// `appAppleId`; not checked in other environments.
    public var appAppleId: Int64?
    /// The environment payloads must be signed for. ``AppStoreEnvironment/xcode`` and
    /// ``AppStoreEnvironment/localTesting`` skip the chain and signature checks, as StoreKit
    /// testing data is not signed by Apple.
    public var environment: AppStoreEnvironment
    /// Every environment whose payloads are accepted (specification section 2: a production
    /// server also receives App Review's Sandbox data), ``environment`` first. Signed
    /// (Production, Sandbox) and unsigned (Xcode, LocalTesting) environments are never mixed.
    public var environments: [AppStoreEnvironment]
    /// The DER certificates of the trusted roots. Defaults to the embedded Apple Root CA - G3
    /// (``AppleRootCertificate/g3DER``). Use ``loadCertificate(from:)`` to read DER or PEM files.
    public var trustedRootsDER: [[UInt8]]
    /// How many verified certificate chains to remember (keyed by the exact JWS header), so that
    /// a known chain costs one P-256 signature check per JWS. `0` disables the cache.
    public var chainCacheCapacity: Int
    /// After how many signatures a cached chain's key has checked, a table of that key's
    /// multiples is built (about 150 KB and 15 ms, once per key), which halves the cost
    /// of every later ES256 check with it (see ``keyTableDefault``). `nil` never builds one.
    /// Either way a signature verifies exactly when OpenSSL's `EVP_PKEY_verify` says it does.
    public var keyTableAfter: Int?

    /// The default of ``keyTableAfter``: a process that verifies a few hundred signatures
    /// (one command-line ingest) never pays for the table; a server or a bulk ingest soon does.
    public static let keyTableDefault = 512

    /// A configuration; `trustedRootsDER` defaults to the embedded Apple Root CA - G3.
    public init(
        bundleId: String,
        appAppleId: Int64? = nil,
        environment: AppStoreEnvironment,
        environments: [AppStoreEnvironment]? = nil,
        trustedRootsDER: [[UInt8]] = [AppleRootCertificate.g3DER],
        chainCacheCapacity: Int = 64,
        keyTableAfter: Int? = VerifierConfiguration.keyTableDefault
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        var accepted = [environment]
        for other in environments ?? [] where !accepted.contains(other) { accepted.append(other) }
        self.environments = accepted
        self.trustedRootsDER = trustedRootsDER
        self.chainCacheCapacity = chainCacheCapacity
        self.keyTableAfter = keyTableAfter
    }
}
