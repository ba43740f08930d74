/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// Stricter than Foundation where an engine that gates revenue needs it to be:
/// duplicate object keys, invalid UTF-8, lone surrogates, leading zeros and
/// trailing garbage are errors, and nesting deeper than ``maximumDepth`` is
/// refused before it can exhaust the stack.
public struct JSONParser: Sendable {
    /// Whether `bytes` placed between quotes are a JSON string meaning exactly
    /// these bytes: ASCII without `"`, `\` or control characters (eight bytes at a time).
    public static func isPlainStringContent(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var index = 0
        while index + 8 <= bytes.count {
            guard Reader.isPlainASCII(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) else { return false }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            index += 1
        }
        return true
    }

    /// Nesting limit for arrays and objects.
    public var maximumDepth: Int

    public init(maximumDepth: Int = 64) {
        self.maximumDepth = maximumDepth
    }

    /// Parses one JSON document that must span all of `bytes` (whitespace aside).
    /// - Throws: ``JSONParseError`` naming the byte offset and what was wrong.
    public func parse<Bytes: Collection>(_ bytes: Bytes) throws(JSONParseError) -> JSONValue where Bytes.Element == UInt8 {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Self.run(buffer, maximumDepth: maximumDepth)
        }
        if let result { return try result.get() }
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { Self.run($0, maximumDepth: maximumDepth) }.get()
    }

    /// Parses a JSON document held in a string.
    public func parse(_ string: String) throws(JSONParseError) -> JSONValue {
        var copy = string
        let result = copy.withUTF8 { Self.run($0, maximumDepth: maximumDepth) }
        return try result.get()
    }

    private static func run(_ buffer: UnsafeBufferPointer<UInt8>, maximumDepth: Int) -> Result<JSONValue, JSONParseError> {
        var reader = Reader(bytes: buffer, maximumDepth: maximumDepth)
        do throws(JSONParseError) {
            reader.skipWhitespace()
            let value = try reader.parseValue(depth: 0)
            reader.skipWhitespace()
            if reader.index != buffer.count {
                throw JSONParseError(offset: reader.index, reason: "unexpected data after the JSON document")
            }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// Why a JSON document was refused, and where.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character '\(Self.printable(bytes[index]))'")
        }
    }

    static func printable(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw fail("nesting deeper than \(maximumDepth) levels") }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String>? = nil
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let keyOffset = index
            let key = try parseString()
            // Duplicate keys make a document mean different things to different parsers: refuse them.
            if members.count < 32 {
                // Compare lengths first: a native string knows its own, and most keys differ in it.
                let length = key.utf8.count
                if members.contains(where: { $0.key.utf8.count == length && $0.key == key }) {
                    throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
                }
            } else {
                if seen == nil { seen = Set(members.map(\.key)) }
                if seen!.contains(key) { throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"") }
                seen!.insert(key)
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            // Apple's payloads have 5-30 members: room for 16 at once instead of
            // growing 1, 2, 4, 8, 16, 32 (one allocation and copy each).
            if members.isEmpty { members.reserveCapacity(16) }
            members.append((key, value))
            if seen != nil && members.count > 32 { seen!.insert(key) }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(JSONObject(members)) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw fail("nesting deeper than \(maximumDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("expected a digit")
        }
        if bytes[index] == UInt8(ascii: "0"), index + 1 < bytes.count,
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1])
        {
            throw fail("leading zeros are not allowed")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let digit = UInt64(bytes[index] &- UInt8(ascii: "0"))
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(digit)
            if o1 || o2 { overflow = true }
            magnitude = m2
            index += 1
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                throw fail("expected a digit after '.'")
            }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                throw fail("expected a digit in exponent")
            }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if isInteger && !overflow {
            if negative {
                if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw JSONParseError(offset: start, reason: "number out of range") }
        return .double(double)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path (nested JWS run to kilobytes of base64url): 64 bytes at a time while
        // none is a quote, a backslash, a control character or non-ASCII, each block
        // checked by a fixed-length loop the compiler vectorizes; then eight bytes at a
        // time, then byte by byte. Plain ASCII up to the quote is the string itself.
        if let base = bytes.baseAddress {
            while index + 64 <= bytes.count, Self.isPlainBlock(UnsafeBufferPointer(start: base + index, count: 64)) {
                index += 64
            }
            let raw = UnsafeRawPointer(base)
            while index + 8 <= bytes.count {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if Self.isPlainASCII(word) { index += 8 } else { break }
            }
        }
        // Up to here every byte was plain ASCII; the bytes after, up to the quote, say
        // whether the string still is (then its bytes need no validation as UTF-8).
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return ascii ? String(decoding: slice, as: UTF8.self) : try Self.validated(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in string") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw fail("unterminated string") }
        // Slow path with escapes.
        var output: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return try output.withUnsafeBufferPointer { buffer throws(JSONParseError) in try Self.validated(buffer, at: start) }
            }
            if byte < 0x20 { throw fail("control character in string") }
            if byte != UInt8(ascii: "\\") {
                output.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): output.append(0x22)
            case UInt8(ascii: "\\"): output.append(0x5C)
            case UInt8(ascii: "/"): output.append(0x2F)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw fail("lone high surrogate")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid low surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("lone low surrogate")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid unicode escape") }
                output.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                throw fail("invalid escape '\\\(Self.printable(escape))'")
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("truncated unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit in unicode escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Whether none of the bytes of `block` is `"`, `\\`, below 0x20 or above 0x7F.
    /// Branch-free over every byte, so that the compiler vectorizes it.
    @inline(__always)
    static func isPlainBlock(_ block: UnsafeBufferPointer<UInt8>) -> Bool {
        var refused: UInt8 = 0
        for byte in block {
            // Below 0x20 or from 0x80 up, the subtraction wraps to 0x60 or more.
            refused |= ((byte &- 0x20) >= 0x60 ? 1 : 0) | (byte == UInt8(ascii: "\\") ? 1 : 0) | (byte == UInt8(ascii: "\"") ? 1 : 0)
        }
        return refused == 0
    }

    /// Whether none of the eight bytes of `word` is `"`, `\\`, below 0x20 or above 0x7F.
    @inline(__always)
    static func isPlainASCII(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // A byte is zero in `x` exactly when (x - ones) & ~x has its high bit set (no false
        // positives for the first such byte; later ones only matter when one is already found).
        func hasZero(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let control = (word &- ones &* 0x20) & ~word & highs  // some byte < 0x20 (for bytes < 0x80)
        return word & highs == 0 && control == 0 && !hasZero(word ^ (ones &* 0x22)) && !hasZero(word ^ (ones &* 0x5C))
    }

    static func validated(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONParseError) -> String {
        // ASCII is by far the common case and needs no validation.
        var ascii = true
        var index = 0
        if let base = buffer.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index + 8 <= buffer.count {
                if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { ascii = false; break }
                index += 8
            }
        }
        if ascii { while index < buffer.count { if buffer[index] >= 0x80 { ascii = false; break }; index += 1 } }
        if ascii { return String(decoding: buffer, as: UTF8.self) }
        guard let string = String(validating: buffer, as: UTF8.self) else {
            throw JSONParseError(offset: offset, reason: "invalid UTF-8 in string")
        }
        return string
    }
}
