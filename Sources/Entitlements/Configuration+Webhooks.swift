import EntitlementCore
import Foundation

/// A feed the engine pushes to webhook endpoints (specification section 12).
public enum WebhookFeed: String, Sendable, Hashable, CaseIterable {
    /// Lifecycle events (`entitlements lifecycle`).
    case lifecycle
    /// Changes to active entitlements (`entitlements changes`, section 8).
    case changes
}

/// One endpoint of the configuration's `webhooks` (specification section 12).
public struct WebhookEndpoint: Sendable {
    /// Where each line is POSTed; also the endpoint's name in the database.
    public var url: URL
    /// Signs every delivery (from the `whsec_` secret).
    public var signer: WebhookSigner
    /// The feeds sent to it, in the order given (default both).
    public var feeds: [WebhookFeed]
    /// Lifecycle types sent (`nil`: all).
    public var types: Set<String>?
    /// Environments of lifecycle lines sent (`nil`: all).
    public var environments: Set<AppStoreEnvironment>?
    /// Delays between attempts at a failing line, in milliseconds; the last one repeats.
    public var retrySchedule: WebhookRetrySchedule

    public init(
        url: URL, signer: WebhookSigner, feeds: [WebhookFeed] = WebhookFeed.allCases, types: Set<String>? = nil,
        environments: Set<AppStoreEnvironment>? = nil, retrySchedule: WebhookRetrySchedule = .standard
    ) {
        self.url = url
        self.signer = signer
        self.feeds = feeds
        self.types = types
        self.environments = environments
        self.retrySchedule = retrySchedule
    }

    /// The lifecycle types of section 12's table: what `types` may name.
    public static let lifecycleTypes: Set<String> = [
        "SUBSCRIPTION_STARTED", "RENEWAL", "PRODUCT_CHANGE", "AUTO_RENEW_DISABLED", "AUTO_RENEW_ENABLED", "BILLING_ISSUE",
        "EXPIRATION", "PURCHASE", "REFUND", "FAMILY_REVOKE", "REFUND_REVERSED", "CONSUMPTION_REQUEST", "CONSENT_RESCINDED",
        "CUSTOMER_MERGED", "GRANT_STARTED", "GRANT_ENDED", "GRANT_REVOKED", "TRANSFER",
    ]

    /// Reads the `webhooks` section: a list of endpoints, each URL once.
    /// - Throws: ``ConfigurationError`` naming the field (`webhooks[0].secret`).
    static func parseList(_ json: JSONValue) throws(ConfigurationError) -> [WebhookEndpoint] {
        guard case .array(let list) = json else {
            throw ConfigurationError(field: "webhooks", message: "expected a list of endpoints such as [{\"url\": \"https://...\", \"secret\": \"whsec_...\"}], found \(json.typeName)")
        }
        var endpoints: [WebhookEndpoint] = []
        for (index, element) in list.enumerated() {
            let endpoint = try parse(element, field: "webhooks[\(index)]")
            if endpoints.contains(where: { $0.url.absoluteString == endpoint.url.absoluteString }) {
                throw ConfigurationError(field: "webhooks[\(index)].url", message: "\(endpoint.url.absoluteString) is listed twice: list each endpoint once")
            }
            endpoints.append(endpoint)
        }
        return endpoints
    }

    static func parse(_ json: JSONValue, field: String) throws(ConfigurationError) -> WebhookEndpoint {
        guard case .object(let object) = json else {
            throw ConfigurationError(field: field, message: "expected an object with url and secret, found \(json.typeName)")
        }
        let known: Set<String> = ["url", "secret", "feeds", "types", "environments", "retrySchedule"]
        for key in object.keys where !known.contains(key) {
            throw ConfigurationError(field: "\(field).\(key)", message: "unknown field; expected one of \(known.sorted().joined(separator: ", "))")
        }
        // url: http(s); plain http only to loopback, as the API client.
        guard case .string(let text)? = object["url"] else {
            throw ConfigurationError(field: "\(field).url", message: "required: the endpoint's URL, e.g. \"https://crm.example.com/hooks/entitlements\"")
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty, url.user == nil, url.fragment == nil
        else {
            throw ConfigurationError(field: "\(field).url", message: "\"\(text)\" is not an http(s) URL such as \"https://crm.example.com/hooks/entitlements\"")
        }
        if scheme == "http" && !HTTPClient.isLoopback(host) {
            throw ConfigurationError(
                field: "\(field).url",
                message: "\"\(text)\": plain http is allowed only to a loopback address (127.0.0.0/8, [::1], or localhost resolving only to those): customers' data must not cross a network unencrypted; use https")
        }
        // secret: whsec_<base64>.
        guard case .string(let secret)? = object["secret"] else {
            throw ConfigurationError(field: "\(field).secret", message: "required: a Standard Webhooks secret, \"whsec_\" then base64 of 24 to 64 random bytes")
        }
        guard let signer = WebhookSigner(secret: secret) else {
            throw ConfigurationError(
                field: "\(field).secret",
                message: "expected \"whsec_\" then standard base64 (with its = padding) of 24 to 64 random bytes, e.g. whsec_$(openssl rand -base64 32)")
        }
        var feeds = WebhookFeed.allCases
        if let value = object["feeds"] {
            let names = try strings(value, field: "\(field).feeds", expected: "a non-empty list of \"lifecycle\", \"changes\"")
            feeds = []
            for (index, name) in names.enumerated() {
                guard let feed = WebhookFeed(rawValue: name) else {
                    throw ConfigurationError(field: "\(field).feeds[\(index)]", message: "\"\(name)\" is not a feed: expected \"lifecycle\" or \"changes\"")
                }
                if !feeds.contains(feed) { feeds.append(feed) }
            }
        }
        var types: Set<String>? = nil
        if let value = object["types"] {
            let names = try strings(value, field: "\(field).types", expected: "a non-empty list of lifecycle types such as [\"RENEWAL\", \"EXPIRATION\"]")
            for (index, name) in names.enumerated() where !lifecycleTypes.contains(name) {
                throw ConfigurationError(
                    field: "\(field).types[\(index)]", message: "\"\(name)\" is not a lifecycle type: expected one of \(lifecycleTypes.sorted().joined(separator: ", "))")
            }
            types = Set(names)
        }
        var environments: Set<AppStoreEnvironment>? = nil
        if let value = object["environments"] {
            let names = try strings(value, field: "\(field).environments", expected: "a non-empty list of Production, Sandbox, Xcode, LocalTesting")
            var set = Set<AppStoreEnvironment>()
            for (index, name) in names.enumerated() {
                guard let environment = AppStoreEnvironment(rawValue: name) else {
                    throw ConfigurationError(field: "\(field).environments[\(index)]", message: "\"\(name)\" is not one of Production, Sandbox, Xcode, LocalTesting")
                }
                set.insert(environment)
            }
            environments = set
        }
        var schedule = WebhookRetrySchedule.standard
        if let value = object["retrySchedule"] {
            guard case .array(let list) = value, !list.isEmpty else {
                throw ConfigurationError(field: "\(field).retrySchedule", message: "expected a non-empty list of delays in milliseconds, e.g. [5000, 30000]")
            }
            var delays: [Int64] = []
            for (index, element) in list.enumerated() {
                guard case .int(let delay) = element, delay > 0, delay <= WebhookRetrySchedule.horizon else {
                    throw ConfigurationError(
                        field: "\(field).retrySchedule[\(index)]", message: "expected a positive number of milliseconds up to 86400000, found \(JSONWriter.string(element))")
                }
                delays.append(delay)
            }
            schedule = WebhookRetrySchedule(delays: delays)
        }
        return WebhookEndpoint(url: url, signer: signer, feeds: feeds, types: types, environments: environments, retrySchedule: schedule)
    }

    /// A non-empty list of strings.
    private static func strings(_ value: JSONValue, field: String, expected: String) throws(ConfigurationError) -> [String] {
        guard case .array(let list) = value, !list.isEmpty else {
            throw ConfigurationError(field: field, message: "expected \(expected), found \(JSONWriter.string(value))")
        }
        var names: [String] = []
        for (index, element) in list.enumerated() {
            guard case .string(let name) = element else {
                throw ConfigurationError(field: "\(field)[\(index)]", message: "expected a string, found \(element.typeName)")
            }
            names.append(name)
        }
        return names
    }
}

/// When a failing line is tried again (specification section 12): after each failed attempt,
/// the next delay of the schedule (5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then the last
/// one again), until the next attempt would fall more than 24 hours after the first:
/// then the line is marked failed and the endpoint goes on. A pure function of its inputs.
public struct WebhookRetrySchedule: Sendable, Equatable {
    /// Delays in milliseconds; after the last, it repeats.
    public var delays: [Int64]

    /// How long a line is retried after its first attempt: 24 hours.
    public static let horizon: Int64 = 86_400_000

    /// 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then hourly.
    public static let standard = WebhookRetrySchedule(delays: [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000])

    public init(delays: [Int64]) { self.delays = delays.isEmpty ? Self.standard.delays : delays }

    /// After the `attempts`-th failed attempt at a line (1 for the first), made at `now`,
    /// whose first attempt was at `firstAttempt`: when to try again, or `nil` when the
    /// line is to be marked failed (the next attempt would be past the horizon).
    public func nextAttempt(afterFailure attempts: Int, at now: Int64, firstAttempt: Int64) -> Int64? {
        let delay = delays[min(max(attempts, 1), delays.count) - 1]
        let next = now + delay
        return next > firstAttempt + Self.horizon ? nil : next
    }
}
