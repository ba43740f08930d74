/// Reads the codec's primitive values from raw bytes, bounds-checked: every
/// read past the end or of a malformed value throws ``CodecError``.
struct ByteReader {
    private let buffer: UnsafeRawBufferPointer
    private(set) var offset: Int = 0
    /// Once read (``StateCodec`` format 2), a string is a number into this table.
    private var table: [String] = []
    /// A table read lazily (``stringTable(lazily:)``): each string's place in the
    /// buffer, checked to be UTF-8, made into a `String` the first time it is read.
    private var lazyTable: [TableString] = []
    private var tableCount = 0
    private var numbered = false
    /// Whether the format read may carry display facts (event facts format 2,
    /// state format 3); the first formats' flag bits for them are refused.
    var displayFacts = true
    /// Whether the format read may carry Apple's 2025–2026 additions (event facts
    /// format 3, state format 4); earlier formats' flag bits for them are refused.
    var extendedFacts = true
    /// Whether the format read keeps operator records field by field (event facts
    /// format 4, state format 5) rather than as their canonical JSON.
    var operatorRecordsAsFields = true
    /// Where strings written out in full are shared, when given.
    private let interner: UnsafeMutablePointer<StringInterner>?

    init(_ buffer: UnsafeRawBufferPointer, interner: UnsafeMutablePointer<StringInterner>? = nil) {
        self.buffer = buffer
        self.interner = interner
    }

    /// A string of a table read lazily: its bytes until it is first read, then the string.
    private enum TableString {
        case bytes(start: Int, count: Int)
        case made(String)
    }

    /// Reads a table of strings written out in full; every later ``string()``
    /// is then a number into it.
    /// - Parameter lazily: Checks each string now but makes it only when first
    ///   read (for a reader that reads only some of them); the errors are the same.
    mutating func stringTable(lazily: Bool = false) throws(CodecError) {
        let count = try self.count()
        tableCount = count
        numbered = true
        if lazily {
            var strings: [TableString] = []
            strings.reserveCapacity(count)
            for _ in 0..<count {
                let bytes = try fullStringBytes()
                strings.append(.bytes(start: offset - bytes.count, count: bytes.count))
            }
            lazyTable = strings
            return
        }
        var strings: [String] = []
        strings.reserveCapacity(count)
        for _ in 0..<count { strings.append(try fullString()) }
        table = strings
    }

    var isAtEnd: Bool { offset == buffer.count }
    /// Whether strings are numbers into a table (read past with the same checks as made).
    var stringsAreNumbered: Bool { numbered }
    var remaining: Int { buffer.count - offset }

    func fail(_ code: CodecError.Code, _ message: String) -> CodecError {
        CodecError(code: code, offset: offset, message: message)
    }

    @inline(__always)
    mutating func byte() throws(CodecError) -> UInt8 {
        guard offset < buffer.count else { throw fail(.truncated, "expected a byte") }
        let value = buffer[offset]
        offset += 1
        return value
    }

    @inline(__always)
    mutating func varint() throws(CodecError) -> UInt64 {
        // One byte is the common case: flags, lengths, codes.
        if offset < buffer.count {
            let first = buffer[offset]
            if first < 0x80 {
                offset += 1
                return UInt64(first)
            }
        }
        return try longVarint()
    }

    private mutating func longVarint() throws(CodecError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var index = offset
        let end = buffer.count
        while index < end {
            let byte = buffer[index]
            index += 1
            result |= UInt64(byte & 0x7F) &<< shift
            if byte < 0x80 {
                guard shift < 63 || byte <= 1 else { throw fail(.malformedInteger, "integer longer than 64 bits") }
                guard byte != 0 || shift == 0 else { throw fail(.malformedInteger, "integer not minimally encoded") }
                offset = index
                return result
            }
            shift += 7
            guard shift <= 63 else { throw fail(.malformedInteger, "integer longer than 64 bits") }
        }
        throw fail(.truncated, "expected an integer")
    }

    @inline(__always)
    mutating func int() throws(CodecError) -> Int64 {
        let zigzag = try varint()
        return Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
    }

    /// A date: 8 bytes little-endian.
    @inline(__always)
    mutating func date() throws(CodecError) -> Int64 {
        guard buffer.count - offset >= 8 else { throw fail(.truncated, "expected a date") }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: Int64.self)
        offset += 8
        return Int64(littleEndian: value)
    }

    /// A count of items that each take at least one byte: never more than the bytes left.
    @inline(__always)
    mutating func count() throws(CodecError) -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw fail(.truncated, "count \(value) exceeds the bytes left") }
        return Int(value)
    }

    /// A string: written out in full, or a number into the string table once one was read.
    @inline(__always)
    mutating func string() throws(CodecError) -> String {
        // `table` is read in place: binding it to a local would retain and release it per string.
        guard numbered else { return try fullString() }
        let number = try tableNumber()
        return lazyTable.isEmpty ? table[number] : tableString(number)
    }

    /// A string's number in the table, not made into a string (read it with
    /// ``tableString(_:)``); only where ``stringsAreNumbered``.
    @inline(__always)
    mutating func stringNumber() throws(CodecError) -> Int {
        precondition(numbered)
        return try tableNumber()
    }

    /// The string numbered `number` in the table (a number ``stringNumber()`` read).
    mutating func tableString(_ number: Int) -> String {
        guard !lazyTable.isEmpty else { return table[number] }
        switch lazyTable[number] {
        case .made(let text):
            return text
        case .bytes(let start, let count):
            // Checked to be UTF-8 when the table was read.
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[start..<start + count])
            let text = count == 0 ? "" : bytes.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
            lazyTable[number] = .made(text)
            return text
        }
    }

    /// Reads past a string without making it.
    @inline(__always)
    mutating func skipString() throws(CodecError) {
        if numbered {
            _ = try tableNumber()
        } else {
            offset += try count()
        }
    }

    /// A string's number in the table, checked to be in it.
    @inline(__always)
    private mutating func tableNumber() throws(CodecError) -> Int {
        let start = offset
        let number = try varint()
        guard number < UInt64(tableCount) else {
            offset = start
            throw fail(.inconsistent, "string number \(number) outside a table of \(tableCount)")
        }
        return Int(number)
    }

    /// Moves to `position`, an offset read before (to decode a record skipped earlier).
    mutating func seek(to position: Int) {
        precondition(position >= 0 && position <= buffer.count)
        offset = position
    }

    /// A string written out in full: a byte count and UTF-8.
    private mutating func fullString() throws(CodecError) -> String {
        let length = try count()
        let start = offset
        offset += length
        if length == 0 { return "" }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
        let make = { slice.withMemoryRebound(to: UInt8.self) { Self.utf8String($0) } }
        let text = interner != nil ? interner!.pointee.string(slice, make: make) : make()
        guard let text else {
            offset = start
            throw fail(.invalidUTF8, "string is not valid UTF-8")
        }
        return text
    }

    /// A string written out in full, as its bytes, checked to be UTF-8 but not made
    /// into a `String` (for a value kept only now and then); they point into the buffer read.
    mutating func fullStringBytes() throws(CodecError) -> UnsafeRawBufferPointer {
        let length = try count()
        let start = offset
        offset += length
        let slice = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
        let valid = slice.withMemoryRebound(to: UInt8.self) { Self.isASCII($0) || Self.utf8String($0) != nil }
        guard valid else {
            offset = start
            throw fail(.invalidUTF8, "string is not valid UTF-8")
        }
        return slice
    }

    /// The string of `bytes`, or `nil` if they are not valid UTF-8.
    ///
    /// `String(validating:as:)` is generic and, unspecialized, costs several
    /// times more than the copy itself; ids and product names are ASCII, so
    /// ASCII takes the direct path and anything else is decoded and checked
    /// against its bytes (decoding replaces invalid sequences).
    private static func utf8String(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        if isASCII(bytes) { return text }
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// Whether every byte is below 0x80, eight bytes at a time.
    @inline(__always)
    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
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

/// Runs `body` over the bytes of an array, without copying.
@inline(__always)
func withRawBytes<Result>(
    _ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(CodecError) -> Result
) throws(CodecError) -> Result {
    let result: Swift.Result<Result, CodecError> = bytes.withUnsafeBytes { buffer in
        do throws(CodecError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try result.get()
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
