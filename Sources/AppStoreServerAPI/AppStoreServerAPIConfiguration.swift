import Foundation

/// The `appStoreServerAPI` section of the configuration (specification section 4): which key
/// signs the engine's requests to the App Store Server API, and where they go.
public struct AppStoreServerAPIConfiguration: Sendable, Equatable {
    /// The issuer ID from App Store Connect's Keys page (a UUID).
    public var issuerId: String
    /// The In-App Purchase key's ID (the `kid` of every token), e.g. `2X9R4HXF34`.
    public var keyId: String
    /// The `.p8` key file, resolved against the configuration file's folder.
    public var privateKeyPath: String
    /// Where requests go instead of Apple's host (tests, a proxy); `nil` for Apple's.
    public var baseURL: URL?
    /// Where a Production request that Apple answers `4040010` (transaction id not found) is
    /// asked again when Sandbox is accepted too, instead of Apple's sandbox host (tests).
    public var sandboxBaseURL: URL?
    /// The HTTP CONNECT proxy (`http://host:port`) for https requests; wins over `HTTPS_PROXY`.
    public var proxy: URL?
    /// The most pages one paged request of a `sync` follows before it stops with
    /// `PAGINATION_LOOP` (an API that says `hasMore` forever).
    public var maxPages: Int
    /// Whether the engine calls Finish Transaction, once, for each transaction it appends
    /// for the first time that grants an entitlement or units under the rules.
    public var finishTransactions: Bool

    /// The default of ``maxPages``: 200,000 notifications, or 2,000,000 transactions of one customer.
    public static let defaultMaxPages = 10_000

    public init(
        issuerId: String, keyId: String, privateKeyPath: String, baseURL: URL? = nil, maxPages: Int = defaultMaxPages,
        sandboxBaseURL: URL? = nil, proxy: URL? = nil, finishTransactions: Bool = false
    ) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyPath = privateKeyPath
        self.baseURL = baseURL
        self.maxPages = maxPages
        self.sandboxBaseURL = sandboxBaseURL
        self.proxy = proxy
        self.finishTransactions = finishTransactions
    }

    /// Apple's production host.
    public static let productionURL = URL(string: "https://api.storekit.apple.com")!
    /// Apple's sandbox host.
    public static let sandboxURL = URL(string: "https://api.storekit-sandbox.apple.com")!

    /// Loads the key and makes the signer for `bundleId`.
    /// - Throws: ``SigningKeyError`` when the key file cannot be used.
    public func signer(bundleId: String) throws(SigningKeyError) -> AppStoreSigner {
        AppStoreSigner(key: try SigningKey(path: privateKeyPath), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }
}
