/// Strict base64, the one encoder and decoder of the package: JWS segments (base64url, no
/// padding) and `x5c` certificates (standard alphabet, with padding), for the verifier, the
/// store, the API client's signer and the test PKI.
///
/// Strict means: no whitespace, no characters outside the alphabet, padding only where the
/// variant requires it, and unused trailing bits must be zero, so that every byte string has
/// exactly one accepted encoding (an altered character is never silently ignored).
public enum Base64 {
    /// Decodes unpadded base64url (RFC 7515 section 2), or returns `nil`.
    public static func decodeURL(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        decode(input, table: urlTable, quads: urlQuads)
    }

    /// Decodes unpadded base64url text, or returns `nil`.
    public static func decodeURL(_ text: Substring) -> [UInt8]? {
        var copy = text
        return copy.withUTF8 { decodeURL($0) }
    }

    /// Decodes standard base64 with mandatory `=` padding (RFC 4648 section 4), or returns `nil`.
    public static func decodeStandardPadded(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard input.count % 4 == 0 else { return nil }
        var end = input.count
        if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1 }
        if end > 0, input[end - 1] == UInt8(ascii: "=") { end -= 1 }
        // A full quad of padding or "x===" is never valid; decode() rejects a 1-char tail.
        return decode(UnsafeBufferPointer(rebasing: input[0..<end]), table: standardTable, quads: standardQuads)
    }

    /// Decodes a string of standard base64 with mandatory padding.
    public static func decodeStandardPadded(_ string: String) -> [UInt8]? {
        var copy = string
        return copy.withUTF8 { decodeStandardPadded($0) }
    }

    /// Lenient decoding for PEM bodies: standard alphabet, whitespace ignored, padding optional.
    public static func decodePEMBody(_ input: some Collection<UInt8>) -> [UInt8]? {
        var compact: [UInt8] = []
        compact.reserveCapacity(input.count)
        for byte in input {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            default: compact.append(byte)
            }
        }
        while compact.last == UInt8(ascii: "=") { compact.removeLast() }
        return compact.withUnsafeBufferPointer { decode($0, table: standardTable, quads: standardQuads) }
    }

    private static func decode(_ input: UnsafeBufferPointer<UInt8>, table: [UInt8], quads: [UInt32]) -> [UInt8]? {
        let count = input.count
        let remainder = count % 4
        if remainder == 1 { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        return table.withUnsafeBufferPointer { table -> [UInt8]? in
            var ok = true
            let result = [UInt8](unsafeUninitializedCapacity: outputCount) { output, initialized in
                var i = 0
                var o = 0
                let fullEnd = count - remainder
                // Every quad but the last: the four characters' values come pre-shifted
                // (a character outside the alphabet sets the top byte), and the three
                // bytes are stored as one 4-byte word whose last byte the next quad
                // overwrites.
                if fullEnd >= 8, let out = UnsafeMutableRawPointer(output.baseAddress) {
                    quads.withUnsafeBufferPointer { quads in
                        while i < fullEnd - 4 {
                            let word = quads[Int(input[i])] | quads[256 + Int(input[i + 1])]
                                | quads[512 + Int(input[i + 2])] | quads[768 + Int(input[i + 3])]
                            if word & 0xFF00_0000 != 0 { ok = false; break }
                            out.storeBytes(of: (word << 8).bigEndian, toByteOffset: o, as: UInt32.self)
                            i += 4
                            o += 3
                        }
                    }
                }
                while ok && i < fullEnd {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = table[Int(input[i + 2])], d = table[Int(input[i + 3])]
                    if (a | b | c | d) & 0x80 != 0 { ok = false; break }
                    let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[o] = UInt8(truncatingIfNeeded: word >> 16)
                    output[o + 1] = UInt8(truncatingIfNeeded: word >> 8)
                    output[o + 2] = UInt8(truncatingIfNeeded: word)
                    i += 4
                    o += 3
                }
                if ok && remainder != 0 {
                    let a = table[Int(input[i])], b = table[Int(input[i + 1])]
                    let c = remainder == 3 ? table[Int(input[i + 2])] : 0
                    if (a | b | c) & 0x80 != 0 {
                        ok = false
                    } else if remainder == 2 {
                        if b & 0x0F != 0 { ok = false }  // non-canonical trailing bits
                        output[o] = a << 2 | b >> 4
                        o += 1
                    } else {
                        if c & 0x03 != 0 { ok = false }
                        output[o] = a << 2 | b >> 4
                        output[o + 1] = b << 4 | c >> 2
                        o += 2
                    }
                }
                initialized = ok ? outputCount : 0
            }
            return ok ? result : nil
        }
    }

    /// Encodes `bytes` as unpadded base64url (RFC 7515 section 2): the one
    /// encoding ``decodeURL(_:)-(UnsafeBufferPointer<UInt8>)`` accepts for them,
    /// so decoding a segment and encoding the bytes again gives the segment back.
    public static func encodeURL(_ bytes: UnsafeRawBufferPointer) -> String {
        encode(bytes, alphabet: urlAlphabet, padded: false)
    }

    /// The length of the unpadded base64url encoding of `count` bytes.
    public static func encodedLengthURL(_ count: Int) -> Int {
        count / 3 * 4 + (count % 3 == 0 ? 0 : count % 3 + 1)
    }

    /// Encodes `bytes` as unpadded base64url.
    public static func encodeURL(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encodeURL($0) }
    }

    /// Encodes `bytes` as standard base64 with `=` padding (RFC 4648 section 4): the one
    /// encoding ``decodeStandardPadded(_:)-(String)`` accepts for them (`x5c`
    /// certificates, the V1 promotional offer signature).
    public static func encodeStandardPadded(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0, alphabet: standardAlphabet, padded: true) }
    }

    /// The one encoder behind both variants: `alphabet` is 64 characters; `padded`
    /// fills the last quad with `=`.
    private static func encode(_ bytes: UnsafeRawBufferPointer, alphabet: [UInt8], padded: Bool) -> String {
        let count = bytes.count
        let outputCount = padded ? (count + 2) / 3 * 4 : encodedLengthURL(count)
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: outputCount) { output in
                var i = 0
                var o = 0
                while i + 3 <= count {
                    let word = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    output[o] = alphabet[Int(word >> 18)]
                    output[o + 1] = alphabet[Int(word >> 12 & 0x3F)]
                    output[o + 2] = alphabet[Int(word >> 6 & 0x3F)]
                    output[o + 3] = alphabet[Int(word & 0x3F)]
                    i += 3
                    o += 4
                }
                switch count - i {
                case 1:
                    let a = bytes[i]
                    output[o] = alphabet[Int(a >> 2)]
                    output[o + 1] = alphabet[Int(a << 4 & 0x3F)]
                    o += 2
                    if padded {
                        output[o] = UInt8(ascii: "=")
                        output[o + 1] = UInt8(ascii: "=")
                        o += 2
                    }
                case 2:
                    let a = bytes[i], b = bytes[i + 1]
                    output[o] = alphabet[Int(a >> 2)]
                    output[o + 1] = alphabet[Int((a << 4 | b >> 4) & 0x3F)]
                    output[o + 2] = alphabet[Int(b << 2 & 0x3F)]
                    o += 3
                    if padded {
                        output[o] = UInt8(ascii: "=")
                        o += 1
                    }
                default:
                    break
                }
                return o
            }
        }
    }

    private static func makeTable(_ alphabet: String) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.utf8.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }

    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlTable = makeTable("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    private static let standardTable = makeTable("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    private static let urlQuads = makeQuads(urlTable)
    private static let standardQuads = makeQuads(standardTable)

    /// Four tables of 256: a character's value shifted to its place in a quad's
    /// 24 bits (18, 12, 6, 0), or `0xFF00_0000` for a character outside the alphabet.
    private static func makeQuads(_ table: [UInt8]) -> [UInt32] {
        var quads = [UInt32](repeating: 0, count: 1024)
        for character in 0..<256 {
            let value = table[character]
            for position in 0..<4 {
                quads[position * 256 + character] =
                    value & 0x80 != 0 ? 0xFF00_0000 : UInt32(value) << UInt32(18 - 6 * position)
            }
        }
        return quads
    }
}
