/// Writes ``JSONValue`` as compact JSON text, members in their stored order.
public enum JSONWriter {
    /// Compact JSON for `value`.
    public static func string(_ value: JSONValue) -> String {
        var output = ""
        output.reserveCapacity(256)
        write(value, into: &output)
        return output
    }

    /// Appends compact JSON for `value` to `output`.
    public static func write(_ value: JSONValue, into output: inout String) {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .double(let number):
            if number == number.rounded(), abs(number) < 1e15 { output += String(Int64(number)) } else { output += "\(number)" }
        case .string(let text): writeString(text, into: &output)
        case .array(let elements):
            output += "["
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output += "," }
                write(element, into: &output)
            }
            output += "]"
        case .object(let object):
            output += "{"
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { output += "," }
                writeString(member.key, into: &output)
                output += ":"
                write(member.value, into: &output)
            }
            output += "}"
        }
    }

    /// Appends `text` as a JSON string literal.
    public static func writeString(_ text: String, into output: inout String) {
        output += "\""
        var needsEscape = false
        for byte in text.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C { needsEscape = true; break }
        if !needsEscape {
            output += text
        } else {
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": output += "\\\""
                case "\\": output += "\\\\"
                case "\n": output += "\\n"
                case "\r": output += "\\r"
                case "\t": output += "\\t"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        output.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        output += "\""
    }
}
