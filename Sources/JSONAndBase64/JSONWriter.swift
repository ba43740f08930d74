/// Writes ``JSONValue`` as compact JSON text, members in their stored order.
///
/// Writes into a byte buffer (no per-token `String` work): it runs for every
/// stored event and every printed line.
public enum JSONWriter {
    /// Compact JSON for `value`.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    /// Compact JSON for `value`, as UTF-8 bytes.
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(512)
        write(value, into: &output)
        return output
    }

    /// Appends compact JSON for `value` to `output`.
    public static func write(_ value: JSONValue, into output: inout String) {
        output += string(value)
    }

    /// Appends `text` as a JSON string literal.
    public static func writeString(_ text: String, into output: inout String) {
        var bytes: [UInt8] = []
        writeString(text, into: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// Compact JSON for `value` in ASCII alone, byte for byte as Python's `json.dumps`
    /// writes it with separators `,` and `:` (as Apple's App Store Server Library does for
    /// JWS headers and claims): ``writeASCIIString(_:into:)`` for every string.
    public static func asciiString(_ value: JSONValue) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(value, into: &output, ascii: true)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends compact JSON for `value` to a byte buffer.
    public static func write(_ value: JSONValue, into output: inout [UInt8]) {
        write(value, into: &output, ascii: false)
    }

    private static func write(_ value: JSONValue, into output: inout [UInt8], ascii: Bool) {
        switch value {
        case .null: output.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let flag):
            if flag { output.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { output.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
        case .int(let number): writeInteger(number, into: &output)
        case .double(let number):
            if number == number.rounded(), abs(number) < 1e15 {
                writeInteger(Int64(number), into: &output)
            } else {
                output.append(contentsOf: "\(number)".utf8)
            }
        case .string(let text):
            if ascii { writeASCIIString(text, into: &output) } else { writeString(text, into: &output) }
        case .array(let elements):
            output.append(0x5B)
            var first = true
            for element in elements {
                if !first { output.append(0x2C) }
                first = false
                write(element, into: &output, ascii: ascii)
            }
            output.append(0x5D)
        case .object(let object):
            output.append(0x7B)
            var first = true
            for member in object.members {
                if !first { output.append(0x2C) }
                first = false
                if ascii { writeASCIIString(member.key, into: &output) } else { writeString(member.key, into: &output) }
                output.append(0x3A)
                write(member.value, into: &output, ascii: ascii)
            }
            output.append(0x7D)
        }
    }

    @usableFromInline static func writeInteger(_ number: Int64, into output: inout [UInt8]) {
        if number == 0 { output.append(0x30); return }
        var magnitude = number.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: enough for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[23 - count] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
                count += 1
            }
            if number < 0 { output.append(0x2D) }
            output.append(contentsOf: buffer[(24 - count)...])
        }
    }

    /// Appends `text` as a JSON string literal to a byte buffer.
    public static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(0x22)
        var copy = text
        copy.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == 0x22 || byte == 0x5C else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                switch byte {
                case 0x22: output.append(contentsOf: [0x5C, 0x22])
                case 0x5C: output.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: output.append(contentsOf: [0x5C, 0x6E])
                case 0x0D: output.append(contentsOf: [0x5C, 0x72])
                case 0x09: output.append(contentsOf: [0x5C, 0x74])
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    output.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
                start = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
        output.append(0x22)
    }

    /// Appends `text` as a JSON string literal in ASCII alone, as Python's `json.dumps`
    /// (`ensure_ascii`) writes it: `"` and `\` escaped, `\n` `\r` `\t` `\b` `\f`, other
    /// control characters and every non-ASCII character as `\uXXXX` (lowercase hex; a
    /// surrogate pair above U+FFFF); DEL (0x7F) as it is.
    public static func writeASCIIString(_ text: String, into output: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        func escape(_ unit: UInt16) {
            output.append(contentsOf: [0x5C, 0x75])
            for shift in stride(from: 12, through: 0, by: -4) { output.append(hex[Int(unit >> UInt16(shift)) & 0xF]) }
        }
        output.append(0x22)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: output.append(contentsOf: [0x5C, 0x22])
            case 0x5C: output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: output.append(contentsOf: [0x5C, 0x72])
            case 0x09: output.append(contentsOf: [0x5C, 0x74])
            case 0x08: output.append(contentsOf: [0x5C, 0x62])
            case 0x0C: output.append(contentsOf: [0x5C, 0x66])
            case 0..<0x20: escape(UInt16(scalar.value))
            case 0x20...0x7F: output.append(UInt8(scalar.value))
            case 0x80..<0x10000: escape(UInt16(scalar.value))
            default: for unit in String(scalar).utf16 { escape(unit) }
            }
        }
        output.append(0x22)
    }
}
