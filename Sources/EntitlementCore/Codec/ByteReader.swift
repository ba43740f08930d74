/// Reads the codec's primitive values from raw bytes, bounds-checked: every
/// read past the end or of a malformed value throws ``CodecError``.
struct ByteReader {
    private let buffer: UnsafeRawBufferPointer
    private(set) var offset: Int = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    var isAtEnd: Bool { offset == buffer.count }
    var remaining: Int { buffer.count - offset }

    func fail(_ code: CodecError.Code, _ message: String) -> CodecError {
        CodecError(code: code, offset: offset, message: message)
    }

    mutating func byte() throws(CodecError) -> UInt8 {
        guard offset < buffer.count else { throw fail(.truncated, "expected a byte") }
        let value = buffer[offset]
        offset += 1
        return value
    }

    mutating func varint() throws(CodecError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < buffer.count else { throw fail(.truncated, "expected an integer") }
            let byte = buffer[offset]
            offset += 1
            if shift == 63, byte > 1 { throw fail(.malformedInteger, "integer longer than 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { throw fail(.malformedInteger, "integer not minimally encoded") }
                return result
            }
            shift += 7
        }
    }

    mutating func int() throws(CodecError) -> Int64 {
        let zigzag = try varint()
        return Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
    }

    /// A count of items that each take at least one byte: never more than the bytes left.
    mutating func count() throws(CodecError) -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw fail(.truncated, "count \(value) exceeds the bytes left") }
        return Int(value)
    }

    mutating func string() throws(CodecError) -> String {
        let length = try count()
        let start = offset
        offset += length
        if length == 0 { return "" }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
        let text = slice.withMemoryRebound(to: UInt8.self) { String(validating: $0, as: UTF8.self) }
        guard let text else {
            offset = start
            throw fail(.invalidUTF8, "string is not valid UTF-8")
        }
        return text
    }

    mutating func bool() throws(CodecError) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        default: offset -= 1; throw fail(.invalidTag, "expected 0 or 1")
        }
    }

    mutating func ref() throws(CodecError) -> RawRef {
        let seq = try int()
        let raw = try byte()
        guard let slot = RawRef.Slot(rawValue: raw) else {
            offset -= 1
            throw fail(.invalidTag, "unknown raw JWS slot \(raw)")
        }
        return RawRef(eventSeq: seq, slot: slot)
    }

    /// Flag bits, refusing any outside `known`.
    mutating func flags(known: UInt64) throws(CodecError) -> UInt64 {
        let start = offset
        let value = try varint()
        guard value & ~known == 0 else {
            offset = start
            throw fail(.invalidTag, "unknown flag bits")
        }
        return value
    }

    func finish() throws(CodecError) {
        guard isAtEnd else { throw fail(.trailingBytes, "\(remaining) bytes after the end of the value") }
    }
}

/// Runs `body` over the contiguous bytes of `bytes`, copying only when the
/// collection has no contiguous storage.
func withRawBytes<Bytes: Collection, Result>(
    _ bytes: Bytes, _ body: (UnsafeRawBufferPointer) throws(CodecError) -> Result
) throws(CodecError) -> Result where Bytes.Element == UInt8 {
    let contiguous: Swift.Result<Result, CodecError>? = bytes.withContiguousStorageIfAvailable { buffer in
        do throws(CodecError) { return .success(try body(UnsafeRawBufferPointer(buffer))) } catch { return .failure(error) }
    }
    if let contiguous { return try contiguous.get() }
    let copy = Array(bytes)
    let copied: Swift.Result<Result, CodecError> = copy.withUnsafeBytes { buffer in
        do throws(CodecError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try copied.get()
}
