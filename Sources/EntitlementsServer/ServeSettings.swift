import Entitlements
import Foundation
import HTTPServer

/// The configuration's optional `serve` section (specification section 4):
/// `{"serve": {"listen": "127.0.0.1:8080", "token": "a long random string"}}`.
public struct ServeSettings: Sendable {
    /// Where to listen; `127.0.0.1:8080` by default.
    public var listen: ListenAddress
    /// The bearer token every endpoint but `POST /notifications` requires; `nil` when none is set.
    public var token: String?
    /// `serve.maxConnections`: connections served at once (``ServerLimits/maxConnections`` when `nil`).
    public var maxConnections: Int?
    /// `serve.maxConnectionsPerClient`: connections one client address may hold (``ServerLimits/maxConnectionsPerClient`` when `nil`).
    public var maxConnectionsPerClient: Int?
    /// `serve.adminToken`: the tokens that may act as an operator (grants, credits, links,
    /// app users; specification section 13), each with the label recorded as the operator.
    public var adminTokens: [AdminToken] = []
    /// `serve.trustedProxies`: the reverse proxies (addresses or CIDR ranges) whose
    /// `X-Forwarded-For` names the client the quarantine bound counts; loopback always.
    public var trustedProxies = TrustedProxies.loopbackOnly

    public static let defaultListen = ListenAddress(host: "127.0.0.1", port: 8080)

    public init(listen: ListenAddress = ServeSettings.defaultListen, token: String? = nil) {
        self.listen = listen
        self.token = token
    }

    /// Sets ``listen`` from `HOST:PORT` (`--listen`); `false` when malformed.
    public mutating func setListen(_ text: String) -> Bool {
        guard let address = ListenAddress(parsing: text) else { return false }
        listen = address
        return true
    }

    /// Whether listening where ``listen`` says needs a token that is not set (an address beyond loopback).
    public var needsTokenToListen: Bool { !listen.isLoopback && token == nil }

    /// Reads the `serve` section of a configuration file (defaults when it has none).
    /// - Throws: ``ConfigurationError`` naming the field.
    public static func load(path: String) throws(ConfigurationError) -> ServeSettings {
        try ServeSettings(configuration: try EngineConfiguration.document(path: path))
    }

    /// Reads the `serve` section of a whole configuration document.
    public init(configuration json: JSONValue) throws(ConfigurationError) {
        self.init()
        guard let section = json["serve"], section != .null else { return }
        try EngineConfiguration.checkServeFieldNames(section)
        guard case .object(let object) = section else { return }
        for key in ["maxConnections", "maxConnectionsPerClient"] {
            switch object[key] {
            case nil, .null?: continue
            case .int(let value)? where value >= 1 && value <= 100_000:
                if key == "maxConnections" { maxConnections = Int(value) } else { maxConnectionsPerClient = Int(value) }
            case let other?:
                throw ConfigurationError(field: "serve.\(key)", message: "expected a whole number from 1 to 100000, found \(JSONWriter.string(other).prefix(40))")
            }
        }
        switch object["listen"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let address = ListenAddress(parsing: text) else {
                throw ConfigurationError(
                    field: "serve.listen", message: "\"\(text)\" is not HOST:PORT with a numeric address, e.g. \"127.0.0.1:8080\" or \"[::1]:8080\"")
            }
            listen = address
        case let other?:
            throw ConfigurationError(field: "serve.listen", message: "expected a string HOST:PORT, found \(other.typeName)")
        }
        switch object["token"] {
        case nil, .null?: break
        case .string(let text)? where !text.isEmpty && text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }):
            token = text
        case let other?:
            throw ConfigurationError(
                field: "serve.token", message: "expected a non-empty string of visible ASCII characters, found \(JSONWriter.string(other).prefix(40))")
        }
        switch object["trustedProxies"] {
        case nil, .null?: break
        case .array(let list)?:
            var entries: [String] = []
            for (index, element) in list.enumerated() {
                guard case .string(let text) = element else {
                    throw ConfigurationError(
                        field: "serve.trustedProxies[\(index)]", message: "expected a string, an address or a CIDR range, found \(element.typeName)")
                }
                entries.append(text)
            }
            trustedProxies = try TrustedProxies(parsing: entries)
        case let other?:
            throw ConfigurationError(
                field: "serve.trustedProxies", message: "expected a list of addresses or CIDR ranges such as [\"10.0.0.0/8\"], found \(other.typeName)")
        }
        if let section = object["adminToken"], section != .null {
            adminTokens = try AdminToken.parse(section)
            if let token, adminTokens.contains(where: { $0.token == token }) {
                throw ConfigurationError(
                    field: "serve.adminToken", message: "is the same as serve.token: the query token would act as an operator; choose another")
            }
        }
    }
}
