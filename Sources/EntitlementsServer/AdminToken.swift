import Entitlements

/// A bearer token that may act as an operator in `serve` (specification section 13), and
/// the label recorded as the operator of what it does.
///
/// `serve.adminToken` is a string (labelled `admin`), an object
/// `{"token": "...", "label": "support"}`, or an array of such objects (one per team
/// or tool, each recorded under its own label).
public struct AdminToken: Sendable, Hashable {
    public var token: String
    public var label: String

    public init(token: String, label: String = "admin") {
        self.token = token
        self.label = label
    }

    /// Reads `serve.adminToken`.
    /// - Throws: ``ConfigurationError`` naming the field.
    static func parse(_ json: JSONValue) throws(ConfigurationError) -> [AdminToken] {
        func token(_ value: JSONValue, field: String) throws(ConfigurationError) -> String {
            guard case .string(let text) = value, !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ConfigurationError(
                    field: field, message: "expected a non-empty string of visible ASCII characters, found \(JSONWriter.string(value).prefix(40))")
            }
            return text
        }
        func entry(_ value: JSONValue, field: String) throws(ConfigurationError) -> AdminToken {
            switch value {
            case .string: return AdminToken(token: try token(value, field: field))
            case .object(let object):
                for key in object.keys.sorted() where key != "token" && key != "label" {
                    throw ConfigurationError(field: "\(field).\(key)", message: "unknown field; expected token, label")
                }
                guard let secret = object["token"] else {
                    throw ConfigurationError(field: "\(field).token", message: "required: the bearer token")
                }
                var label = "admin"
                switch object["label"] {
                case nil, .null?: break
                case .string(let text)? where !text.isEmpty && text.utf8.count <= 256: label = text
                case let other?:
                    throw ConfigurationError(field: "\(field).label", message: "expected a name of 1 to 256 bytes, found \(JSONWriter.string(other).prefix(40))")
                }
                return AdminToken(token: try token(secret, field: "\(field).token"), label: label)
            default:
                throw ConfigurationError(
                    field: field, message: "expected a token string or {\"token\": \"...\", \"label\": \"support\"}, found \(value.typeName)")
            }
        }
        let tokens: [AdminToken]
        if case .array(let values) = json {
            guard !values.isEmpty else { throw ConfigurationError(field: "serve.adminToken", message: "empty: give at least one token") }
            var list: [AdminToken] = []
            for (index, value) in values.enumerated() { list.append(try entry(value, field: "serve.adminToken[\(index)]")) }
            tokens = list
        } else {
            tokens = [try entry(json, field: "serve.adminToken")]
        }
        if Set(tokens.map(\.token)).count != tokens.count {
            throw ConfigurationError(field: "serve.adminToken", message: "the same token is listed twice")
        }
        return tokens
    }
}
