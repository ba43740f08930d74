@_exported import AppStoreServerAPI
import EntitlementCore
import Foundation

extension AppStoreServerAPIConfiguration {
    /// Reads the `appStoreServerAPI` section. Relative `privateKeyPath` resolves against
    /// `baseDirectory`; the key itself is read only by the commands that sign.
    /// - Throws: ``ConfigurationError`` naming the field.
    static func parse(_ json: JSONValue, baseDirectory: URL) throws(ConfigurationError) -> AppStoreServerAPIConfiguration {
        let section = "appStoreServerAPI"
        guard case .object(let object) = json else {
            throw ConfigurationError(field: section, message: "expected an object with issuerId, keyId, privateKeyPath (and baseURL for tests)")
        }
        let known: Set<String> = ["issuerId", "keyId", "privateKeyPath", "baseURL", "maxPages", "sandboxBaseURL", "proxy", "finishTransactions"]
        for key in object.keys where !known.contains(key) {
            throw ConfigurationError(field: "\(section).\(key)", message: "unknown field; expected one of \(known.sorted().joined(separator: ", "))")
        }
        func string(_ name: String, _ hint: String) throws(ConfigurationError) -> String {
            guard case .string(let value)? = object[name], !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConfigurationError(field: "\(section).\(name)", message: "required: \(hint)")
            }
            return value
        }
        let issuerId = try string("issuerId", "the issuer ID from App Store Connect > Users and Access > Integrations (a UUID)")
        let keyId = try string("keyId", "the In-App Purchase key's ID, e.g. \"2X9R4HXF34\"")
        let path = try string("privateKeyPath", "the In-App Purchase key file (SubscriptionKey_<keyId>.p8)")
        let keyPath = path.hasPrefix("/") ? path : baseDirectory.appendingPathComponent(path).path
        func url(_ name: String) throws(ConfigurationError) -> URL? {
            switch object[name] {
            case nil, .null?: return nil
            case .string(let text)?:
                guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
                    let host = url.host, !host.isEmpty, url.query == nil
                else {
                    throw ConfigurationError(field: "\(section).\(name)", message: "\"\(text)\" is not an http(s) URL such as \"http://127.0.0.1:9900\"")
                }
                if scheme == "http" && !HTTPClient.isLoopback(host) {
                    throw ConfigurationError(
                        field: "\(section).\(name)",
                        message: "\"\(text)\": plain http is allowed only to a loopback address (127.0.0.0/8, [::1], or localhost resolving only to those): the bearer token must not cross a network unencrypted; use https")
                }
                return url
            case let other?:
                throw ConfigurationError(field: "\(section).\(name)", message: "expected a URL string, found \(other.typeName)")
            }
        }
        let baseURL = try url("baseURL")
        let sandboxBaseURL = try url("sandboxBaseURL")
        var proxy: URL? = nil
        switch object["proxy"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let url = HTTPClient.proxyURL(text) else {
                throw ConfigurationError(field: "\(section).proxy", message: "\"\(text)\" is not an HTTP CONNECT proxy URL such as \"http://proxy.example.com:3128\"")
            }
            proxy = url
        case let other?:
            throw ConfigurationError(field: "\(section).proxy", message: "expected a URL string such as \"http://proxy.example.com:3128\", found \(other.typeName)")
        }
        var maxPages = AppStoreServerAPIConfiguration.defaultMaxPages
        switch object["maxPages"] {
        case nil: break
        case .int(let value)? where value >= 1 && value <= Int64(Int32.max): maxPages = Int(value)
        case let other?:
            throw ConfigurationError(
                field: "\(section).maxPages",
                message: "expected a positive integer (pages one sync follows; default \(AppStoreServerAPIConfiguration.defaultMaxPages)), found \(JSONWriter.string(other))")
        }
        var finishTransactions = false
        switch object["finishTransactions"] {
        case nil, .null?: break
        case .bool(let value)?: finishTransactions = value
        case let other?:
            throw ConfigurationError(field: "\(section).finishTransactions", message: "expected true or false, found \(JSONWriter.string(other))")
        }
        return AppStoreServerAPIConfiguration(issuerId: issuerId, keyId: keyId, privateKeyPath: keyPath, baseURL: baseURL, maxPages: maxPages,
            sandboxBaseURL: sandboxBaseURL, proxy: proxy, finishTransactions: finishTransactions)
    }
}
