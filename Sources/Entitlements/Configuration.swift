import AppStoreVerification
import EntitlementCore
import Foundation

/// The engine's configuration (specification section 4).
public struct EngineConfiguration: Sendable {
    public var bundleId: String
    /// Required in Production.
    public var appAppleId: Int64?
    /// The first (or only) environment accepted.
    public var environment: AppStoreEnvironment
    /// Every environment accepted (specification section 2), ``environment`` first: e.g.
    /// Production and Sandbox, since App Review buys with sandbox accounts in the
    /// production app. Never mixes signed and unsigned environments.
    public var environments: [AppStoreEnvironment]
    /// Trusted roots (DER); `nil` means the embedded Apple Root CA - G3.
    public var rootCertificatesDER: [[UInt8]]?
    /// Trusted roots of legacy app receipts (DER, specification section 16); `nil` means
    /// the embedded Apple Inc. Root. Configuration file: `receiptRootCertificates`.
    public var receiptRootCertificatesDER: [[UInt8]]? = nil
    public var rules: Rules
    /// Largest input accepted, in bytes; a larger one is quarantined unread past this limit.
    public var maxInputBytes: Int
    /// The App Store Server API's key and host (`sync`, `sign`, `set-account-token`); `nil` when not configured.
    public var appStoreServerAPI: AppStoreServerAPIConfiguration? = nil
    /// The endpoints the feeds are pushed to (specification section 12); empty when none.
    public var webhooks: [WebhookEndpoint] = []
    /// Replicated acknowledgments through Litestream (specification section 15); `nil` when not configured.
    public var replication: ReplicationConfiguration? = nil
    /// How customers become the team's own users (specification section 13).
    public var appUsers = AppUsersConfiguration()
    /// The reporting currency, exchange rates and commission program of `revenue` and
    /// `metrics` (specification section 14); USD without rates when not configured.
    public var revenue = RevenueSettings()
    /// The `revenue.exchangeRates` path as configured, for messages; `nil` when none.
    public var exchangeRatesPath: String? = nil
    /// After how many signatures a known certificate's key has checked, the verifier builds
    /// a table of that key's multiples and checks later signatures with it at half the cost
    /// (``VerifierConfiguration/keyTableAfter``); `nil` never builds one. Not part of the
    /// configuration file: the default suits a command line and a server alike.
    public var keyTableAfter: Int? = VerifierConfiguration.keyTableDefault
    /// How long a write waits for another writer's lock before the attempt counts as busy
    /// (and is retried), in milliseconds; also bounds each of the retries when opening.
    /// Configuration file: `busyTimeoutMilliseconds`, optional.
    public var busyTimeoutMilliseconds: Int = EngineConfiguration.defaultBusyTimeoutMilliseconds

    public static let defaultMaxInputBytes = 1 << 20
    public static let defaultBusyTimeoutMilliseconds = 10_000

    public init(
        bundleId: String, appAppleId: Int64? = nil, environment: AppStoreEnvironment, environments: [AppStoreEnvironment]? = nil,
        rootCertificatesDER: [[UInt8]]? = nil, rules: Rules, maxInputBytes: Int = EngineConfiguration.defaultMaxInputBytes
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        var accepted = [environment]
        for other in environments ?? [] where !accepted.contains(other) { accepted.append(other) }
        self.environments = accepted
        self.rootCertificatesDER = rootCertificatesDER
        self.rules = rules
        self.maxInputBytes = maxInputBytes
    }

    /// Reads a configuration file. Relative `rootCertificates` paths resolve
    /// against the file's folder.
    /// - Throws: ``ConfigurationError`` naming the field.
    public static func load(path: String) throws(ConfigurationError) -> EngineConfiguration {
        try EngineConfiguration(json: try document(path: path), baseDirectory: baseDirectory(of: path))
    }

    /// The configuration file at `path`, read (bounded in size) and parsed, for every
    /// reader of its sections.
    /// - Throws: ``ConfigurationError`` when it cannot be read or is not JSON.
    public static func document(path: String) throws(ConfigurationError) -> JSONValue {
        let data = try ConfigurationFile.read(path: path)
        // A byte order mark some editors write first is no part of the JSON.
        let body = data.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(data.dropFirst(3)) : data
        do { return try JSONParser().parse(body) } catch {
            throw ConfigurationError(field: nil, message: "the configuration file \(path) is not valid JSON: \(error.description)")
        }
    }

    /// The folder relative paths in the configuration file at `path` resolve against.
    public static func baseDirectory(of path: String) -> URL { URL(fileURLWithPath: path).deletingLastPathComponent() }

    /// Reads a configuration document.
    public init(json: JSONValue, baseDirectory: URL) throws(ConfigurationError) {
        OpenSSLAtExit.keepStateUntilTheEnd()  // before the certificates are read
        guard case .object(let object) = json else {
            throw ConfigurationError(field: nil, message: "the configuration must be a JSON object")
        }
        let known: Set<String> = [
            "bundleId", "appAppleId", "environment", "rootCertificates", "rules", "maxInputBytes", "busyTimeoutMilliseconds", "appStoreServerAPI",
            "serve", "webhooks", "replication", "appUsers", "receiptRootCertificates", "revenue",
        ]
        for key in object.keys where !known.contains(key) {
            throw ConfigurationError(field: key, message: "unknown field; expected one of \(known.sorted().joined(separator: ", "))")
        }
        try Self.checkServeFieldNames(object["serve"])
        let bundleId: String
        switch object["bundleId"] {
        case .string(let text)? where !text.isEmpty: bundleId = text
        case nil, .string?:
            throw ConfigurationError(field: "bundleId", message: "required: the app's bundle identifier, e.g. \"com.example.app\"")
        case let other?:
            throw ConfigurationError(field: "bundleId", message: "expected a string such as \"com.example.app\", found \(other.typeName)")
        }
        // A slip that no payload can match: every input would be INVALID_APP_IDENTIFIER and a
        // new database bound to it.
        guard !bundleId.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
            throw ConfigurationError(
                field: "bundleId",
                message: "\(JSONWriter.string(.string(bundleId))) holds whitespace or control characters; a bundle identifier is letters, digits, hyphens and periods")
        }
        let environments = try Self.environments(object["environment"])
        let environment = environments[0]
        var appAppleId: Int64? = nil
        switch object["appAppleId"] {
        case nil, .null?: break
        case .int(let id)? where id > 0: appAppleId = id
        case let other?: throw ConfigurationError(field: "appAppleId", message: "expected a positive integer, found \(JSONWriter.string(other))")
        }
        if environments.contains(.production) && appAppleId == nil {
            throw ConfigurationError(field: "appAppleId", message: "required in Production: the app's Apple ID (a number)")
        }
        let roots = try Self.certificateFiles(
            object["rootCertificates"], field: "rootCertificates", baseDirectory: baseDirectory, defaultRoot: "Apple Root CA - G3")
        let receiptRoots = try Self.certificateFiles(
            object["receiptRootCertificates"], field: "receiptRootCertificates", baseDirectory: baseDirectory,
            defaultRoot: "Apple Inc. Root")
        var maxInputBytes = Self.defaultMaxInputBytes
        switch object["maxInputBytes"] {
        case nil: break
        case .int(let limit)? where limit >= 1024 && limit <= 64 << 20: maxInputBytes = Int(limit)
        case let other?:
            throw ConfigurationError(field: "maxInputBytes", message: "expected an integer from 1024 to 67108864, found \(JSONWriter.string(other))")
        }
        var busyTimeoutMilliseconds = Self.defaultBusyTimeoutMilliseconds
        switch object["busyTimeoutMilliseconds"] {
        case nil: break
        case .int(let timeout)? where timeout >= 1 && timeout <= 600_000: busyTimeoutMilliseconds = Int(timeout)
        case let other?:
            throw ConfigurationError(field: "busyTimeoutMilliseconds", message: "expected an integer from 1 to 600000, found \(JSONWriter.string(other))")
        }
        guard let rulesJSON = object["rules"] else {
            throw ConfigurationError(field: "rules", message: "required: an object with version and products")
        }
        let rules: Rules
        do { rules = try Rules(json: rulesJSON) } catch { throw ConfigurationError(field: error.field, message: error.reason) }
        self.init(
            bundleId: bundleId, appAppleId: appAppleId, environment: environment, environments: environments,
            rootCertificatesDER: roots, rules: rules,
            maxInputBytes: maxInputBytes)
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.receiptRootCertificatesDER = receiptRoots
        if let section = object["appStoreServerAPI"] { appStoreServerAPI = try .parse(section, baseDirectory: baseDirectory) }
        if let section = object["webhooks"] { webhooks = try WebhookEndpoint.parseList(section) }
        if let section = object["replication"] { replication = try .parse(section, baseDirectory: baseDirectory) }
        if let section = object["appUsers"] { appUsers = try .parse(section) }
        if let section = object["revenue"], section != .null {
            (revenue, exchangeRatesPath) = try Self.parseRevenue(section, baseDirectory: baseDirectory)
        }
    }
}

extension EngineConfiguration {
    /// A list of certificate files (DER or PEM), relative paths against `baseDirectory`;
    /// `nil` when the field is absent.
    static func certificateFiles(
        _ value: JSONValue?, field: String, baseDirectory: URL, defaultRoot: String
    ) throws(ConfigurationError) -> [[UInt8]]? {
        switch value {
        case nil, .null?: return nil
        case .array(let paths)?:
            guard !paths.isEmpty else {
                throw ConfigurationError(field: field, message: "empty: list certificate files, or leave the field out to trust \(defaultRoot)")
            }
            var loaded: [[UInt8]] = []
            for (index, element) in paths.enumerated() {
                guard case .string(let path) = element, !path.isEmpty else {
                    throw ConfigurationError(field: "\(field)[\(index)]", message: "expected a file path string")
                }
                let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : baseDirectory.appendingPathComponent(path)
                guard let data = try? Data(contentsOf: url) else {
                    throw ConfigurationError(field: "\(field)[\(index)]", message: "cannot read certificate file \(url.path)")
                }
                do {
                    loaded.append(try loadCertificate(from: Array(data)))
                } catch {
                    throw ConfigurationError(
                        field: "\(field)[\(index)]", message: "\(url.path) is not a DER or PEM certificate: \(error.message)")
                }
                if let problem = trustAnchorProblem(loaded[loaded.count - 1]) {
                    throw ConfigurationError(field: "\(field)[\(index)]", message: "\(url.path): \(problem)")
                }
            }
            return loaded
        case let other?:
            throw ConfigurationError(field: field, message: "expected an array of file paths, found \(other.typeName)")
        }
    }

    /// The fields of the `serve` section (specification section 4), read by `serve`.
    public static let serveFields = ["listen", "token", "maxConnections", "maxConnectionsPerClient", "adminToken", "trustedProxies"]

    /// The `serve` section's shape and field names, checked by every command that reads the
    /// configuration (its values are read by `serve`), so one file gets one answer everywhere.
    /// - Throws: ``ConfigurationError`` naming the field.
    public static func checkServeFieldNames(_ section: JSONValue?) throws(ConfigurationError) {
        guard let section, section != .null else { return }
        guard case .object(let object) = section else {
            throw ConfigurationError(field: "serve", message: "expected an object with listen and token")
        }
        for key in object.keys.sorted() where !serveFields.contains(key) {
            throw ConfigurationError(field: "serve.\(key)", message: "unknown field; expected \(serveFields.joined(separator: ", "))")
        }
    }

    /// `environment`: one name, or a non-empty list of distinct names, never
    /// mixing signed (Production, Sandbox) with unsigned (Xcode, LocalTesting) data.
    static func environments(_ value: JSONValue?) throws(ConfigurationError) -> [AppStoreEnvironment] {
        let names = "one of Production, Sandbox, Xcode, LocalTesting, or a list of them such as [\"Production\", \"Sandbox\"]"
        func parse(_ value: JSONValue, field: String) throws(ConfigurationError) -> AppStoreEnvironment {
            guard case .string(let name) = value else {
                throw ConfigurationError(field: field, message: "expected \(names), found \(value.typeName)")
            }
            guard let environment = AppStoreEnvironment(rawValue: name) else {
                throw ConfigurationError(field: field, message: "\"\(name)\" is not one of Production, Sandbox, Xcode, LocalTesting")
            }
            return environment
        }
        switch value {
        case nil, .null?:
            throw ConfigurationError(field: "environment", message: "required: \(names)")
        case .array(let list)?:
            guard !list.isEmpty else { throw ConfigurationError(field: "environment", message: "empty list: expected \(names)") }
            var environments: [AppStoreEnvironment] = []
            for (index, element) in list.enumerated() {
                let environment = try parse(element, field: "environment[\(index)]")
                guard !environments.contains(environment) else {
                    throw ConfigurationError(field: "environment[\(index)]", message: "\(environment.rawValue) is listed twice")
                }
                environments.append(environment)
            }
            if environments.contains(where: \.isLocal) && environments.contains(where: { !$0.isLocal }) {
                throw ConfigurationError(
                    field: "environment",
                    message:
                        "Xcode and LocalTesting (unsigned StoreKit testing data) cannot be combined with Production or Sandbox (data signed by Apple): use a separate database and configuration for each")
            }
            return environments
        case let other?:
            return [try parse(other, field: "environment")]
        }
    }
}

/// A configuration that cannot be used, naming the field at fault.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var field: String?
    public var message: String
    public var description: String {
        if let field { return "configuration field \"\(field)\": \(message)" }
        return message
    }

    /// - Parameters:
    ///   - field: the configuration field at fault (`serve.listen`), when one is.
    ///   - message: what is wrong, in words a person can act on.
    public init(field: String?, message: String) {
        self.field = field
        self.message = message
    }
}

extension EngineConfiguration {
    /// ``busyTimeoutMilliseconds`` as the store takes it (clamped to what SQLite can hold).
    var storeBusyTimeout: Int32 { Int32(clamping: max(0, busyTimeoutMilliseconds)) }
}
