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
        let known: Set<String> = ["issuerId", "keyId", "privateKeyPath", "baseURL", "maxPages"]
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
        var baseURL: URL? = nil
        switch object["baseURL"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
                let host = url.host, !host.isEmpty, url.query == nil
            else {
                throw ConfigurationError(field: "\(section).baseURL", message: "\"\(text)\" is not an http(s) URL such as \"http://127.0.0.1:9900\"")
            }
            if scheme == "http" && !HTTPClient.isLoopback(host) {
                throw ConfigurationError(
                    field: "\(section).baseURL",
                    message: "\"\(text)\": plain http is allowed only to a loopback address (127.0.0.0/8, [::1], or localhost resolving only to those): the bearer token must not cross a network unencrypted; use https")
            }
            baseURL = url
        case let other?:
            throw ConfigurationError(field: "\(section).baseURL", message: "expected a URL string, found \(other.typeName)")
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
        return AppStoreServerAPIConfiguration(issuerId: issuerId, keyId: keyId, privateKeyPath: keyPath, baseURL: baseURL, maxPages: maxPages)
    }
}
