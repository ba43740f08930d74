/// JSON for JWS headers and claims, written byte for byte as Apple's Python library
/// writes them (PyJWT over `json.dumps` with separators `,` and `:`): members in the
/// order given, no whitespace, `"` `\` and control characters escaped, every
/// non-ASCII character as `\uXXXX` (lowercase hex; surrogate pairs above U+FFFF).
enum CompactJSON {
    /// A claim value: the three types the App Store's signed requests use.
    enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    /// `{"k":v,...}` for `members`, in order.
    static func object(_ members: [(String, Value)]) -> String {
        var out = "{"
        for (index, member) in members.enumerated() {
            if index > 0 { out += "," }
            writeString(member.0, into: &out)
            out += ":"
            switch member.1 {
            case .string(let text): writeString(text, into: &out)
            case .int(let number): out += String(number)
            case .bool(let flag): out += flag ? "true" : "false"
            }
        }
        return out + "}"
    }

    static func writeString(_ text: String, into out: inout String) {
        let hex = Array("0123456789abcdef")
        func escape(_ unit: UInt16, into out: inout String) {
            out += "\\u"
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hex[Int(unit >> UInt16(shift)) & 0xF]) }
        }
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            case 0..<0x20: escape(UInt16(scalar.value), into: &out)
            case 0x20..<0x7F: out.unicodeScalars.append(scalar)
            case 0x7F: out.unicodeScalars.append(scalar)
            case 0x80..<0x10000: escape(UInt16(scalar.value), into: &out)
            default:
                for unit in String(scalar).utf16 { escape(unit, into: &out) }
            }
        }
        out += "\""
    }
}
