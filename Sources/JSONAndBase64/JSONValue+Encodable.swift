/// `JSONValue` is `Encodable`: any encoder writes exactly its keys and values.
///
/// An object's keys are handed to the encoder in their order here (the specification's order).
/// Whether they come out in that order is the encoder's choice: Foundation's `JSONEncoder`
/// on Linux orders them by the process's hash seed unless `.sortedKeys` is set. For the
/// command line's exact bytes, use ``JSONWriter``.
extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .int(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .double(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let object):
            var container = encoder.container(keyedBy: JSONKey.self)
            for member in object.members {
                if case .null = member.value {
                    try container.encodeNil(forKey: JSONKey(member.key))
                } else {
                    try container.encode(member.value, forKey: JSONKey(member.key))
                }
            }
        }
    }

    /// Any object key.
    struct JSONKey: CodingKey {
        var stringValue: String
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}

/// A value whose JSON is ``json()``, the specification's keys and values: it encodes to
/// exactly that with any `Encoder` (`JSONEncoder().encode(view)` gives the command
/// line's JSON, key order aside).
public protocol JSONRepresentable: Encodable {
    /// The value as the specification's JSON.
    func json() -> JSONValue
}

extension JSONRepresentable {
    public func encode(to encoder: any Encoder) throws { try json().encode(to: encoder) }
}
