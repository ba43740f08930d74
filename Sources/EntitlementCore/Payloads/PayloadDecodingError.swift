/// Why a decoded JWS payload could not be read as the Apple type it claims to be.
///
/// The field is named so that a person can find it in the payload.
public struct PayloadDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "field \"\(field)\": \(reason)" }
}

/// Typed, strict access to the members of a payload object.
///
/// A missing or `null` field reads as `nil`; a field of the wrong type, an
/// integer out of range or a date that looks like seconds is an error.
public struct FieldReader: Sendable {
    public let object: JSONObject
    let prefix: String

    public init(_ value: JSONValue, name: String = "payload", prefix: String = "") throws(PayloadDecodingError) {
        guard case .object(let object) = value else {
            throw PayloadDecodingError(field: name, reason: "expected an object, found \(value.typeName)")
        }
        self.object = object
        self.prefix = prefix
    }

    func path(_ key: String) -> String { prefix.isEmpty ? key : prefix + "." + key }

    func value(_ key: String) -> JSONValue? {
        guard let value = object[key] else { return nil }
        if case .null = value { return nil }
        return value
    }

    public func string(_ key: String) throws(PayloadDecodingError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw PayloadDecodingError(field: path(key), reason: "expected a string, found \(value.typeName)")
        }
        return text
    }

    public func requiredString(_ key: String) throws(PayloadDecodingError) -> String {
        guard let text = try string(key) else { throw PayloadDecodingError(field: path(key), reason: "missing") }
        guard !text.isEmpty else { throw PayloadDecodingError(field: path(key), reason: "empty") }
        return text
    }

    public func int(_ key: String) throws(PayloadDecodingError) -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .int(let number): return number
        case .double(let number):
            throw PayloadDecodingError(field: path(key), reason: "expected an integer, found \(number)")
        default:
            throw PayloadDecodingError(field: path(key), reason: "expected an integer, found \(value.typeName)")
        }
    }

    public func int(_ key: String, in range: ClosedRange<Int64>) throws(PayloadDecodingError) -> Int64? {
        guard let number = try int(key) else { return nil }
        guard range.contains(number) else {
            throw PayloadDecodingError(field: path(key), reason: "\(number) is out of range \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// Apple's dates are integer milliseconds since 1970. A value below
    /// ``FieldReader/earliestPlausibleDate`` is refused: it is almost always a
    /// date in seconds, which would silently mean January 1970.
    public func date(_ key: String) throws(PayloadDecodingError) -> Int64? {
        guard let number = try int(key) else { return nil }
        guard number >= Self.earliestPlausibleDate else {
            throw PayloadDecodingError(
                field: path(key),
                reason: "\(number) is not a date in milliseconds since 1970 (seconds instead of milliseconds?)")
        }
        guard number <= Self.latestPlausibleDate else {
            throw PayloadDecodingError(field: path(key), reason: "\(number) is too far in the future to be a date in milliseconds")
        }
        return number
    }

    public func requiredDate(_ key: String) throws(PayloadDecodingError) -> Int64 {
        guard let number = try date(key) else { throw PayloadDecodingError(field: path(key), reason: "missing") }
        return number
    }

    public func bool(_ key: String) throws(PayloadDecodingError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else {
            throw PayloadDecodingError(field: path(key), reason: "expected a boolean, found \(value.typeName)")
        }
        return flag
    }

    public func stringArray(_ key: String) throws(PayloadDecodingError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else {
            throw PayloadDecodingError(field: path(key), reason: "expected an array, found \(value.typeName)")
        }
        var strings: [String] = []
        for element in elements {
            guard case .string(let text) = element else {
                throw PayloadDecodingError(field: path(key), reason: "expected an array of strings")
            }
            strings.append(text)
        }
        return strings
    }

    /// An array of objects, each read by its own reader (`key[0]`, `key[1]`, ...).
    public func objects(_ key: String) throws(PayloadDecodingError) -> [FieldReader]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else {
            throw PayloadDecodingError(field: path(key), reason: "expected an array, found \(value.typeName)")
        }
        var readers: [FieldReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let name = path(key) + "[\(index)]"
            readers.append(try FieldReader(element, name: name, prefix: name))
        }
        return readers
    }

    public func nested(_ key: String) throws(PayloadDecodingError) -> FieldReader? {
        guard let value = value(key) else { return nil }
        return try FieldReader(value, name: path(key), prefix: path(key))
    }

    /// 2001-09-09T01:46:40Z: anything earlier is taken for seconds, not milliseconds.
    public static let earliestPlausibleDate: Int64 = 1_000_000_000_000
    /// 2286-11-20: anything later is taken for microseconds or garbage.
    public static let latestPlausibleDate: Int64 = 9_999_999_999_999
}
