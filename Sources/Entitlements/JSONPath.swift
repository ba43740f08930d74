import EntitlementCore

/// A position in a JSON document, written the way people read one:
/// `data[0].lastTransactions[1].signedFoo`, or `notificationHistory[0]["odd key"]`
/// for a key that is not a plain name.
struct JSONPath: Hashable, CustomStringConvertible {
    /// One step from a value into one of its members or elements.
    enum Component: Hashable {
        case key(String)
        case index(Int)
    }

    /// The steps from the document's root, outermost first.
    var components: [Component]

    var description: String {
        var text = ""
        for component in components {
            switch component {
            case .index(let index):
                text += "[\(index)]"
            case .key(let key) where Self.isPlainName(key):
                text += text.isEmpty ? key : "." + key
            case .key(let key):
                text += "[" + JSONWriter.string(.string(key)) + "]"
            }
        }
        return text
    }

    /// The value at this position in `root`, if there is one.
    func value(in root: JSONValue) -> JSONValue? {
        var current = root
        for component in components {
            switch (component, current) {
            case (.key(let key), .object(let object)):
                guard let member = object[key] else { return nil }
                current = member
            case (.index(let index), .array(let elements)):
                guard elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// Whether `key` reads unambiguously after a `.`: ASCII letters, digits, `_` and `-`
    /// (Apple's `receipt-data`, say), not empty.
    static func isPlainName(_ key: String) -> Bool {
        !key.isEmpty
            && key.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"), UInt8(ascii: "-"):
                    return true
                default:
                    return false
                }
            }
    }
}
