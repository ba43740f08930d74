/// Appends the codec's primitive values to bytes of its own.
///
/// Unsigned integers are LEB128 varints; signed ones are zigzag varints;
/// dates are 8 bytes little-endian; strings are a varint byte count and
/// their UTF-8 bytes.
///
/// The bytes are in memory the writer allocates, grows and frees itself (it is
/// not copyable): an append is a store behind one capacity check, where appending
/// to an array also checks each time that its storage is not shared. ``bytes``
/// hands them out as an array.
struct ByteWriter: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// How many bytes were written.
    private(set) var written = 0
    /// When set (``StateCodec`` format 2), strings are written as numbers into
    /// this table, which the caller writes out in full before the body.
    private(set) var table: StringTableBuilder?

    init(capacity: Int = 128, numberingStrings: Bool = false) {
        self.capacity = Swift.max(capacity, 16)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
        table = numberingStrings ? StringTableBuilder() : nil
    }

    deinit { base.deallocate() }

    /// The bytes written, as an array.
    var bytes: [UInt8] { [UInt8](UnsafeRawBufferPointer(start: base, count: written)) }

    /// Makes room for `more` bytes.
    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if capacity - written < more { grow(toFit: more) }
    }

    private mutating func grow(toFit more: Int) {
        let grown = Swift.max(capacity * 2, written + more)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 8)
        memory.copyMemory(from: base, byteCount: written)
        base.deallocate()
        base = memory
        capacity = grown
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        reserve(1)
        base.storeBytes(of: value, toByteOffset: written, as: UInt8.self)
        written += 1
    }

    /// One byte is the common case (flags, counts, string numbers): written inline.
    @inline(__always)
    mutating func varint(_ value: UInt64) {
        if value < 0x80 {
            byte(UInt8(truncatingIfNeeded: value))
        } else {
            longVarint(value)
        }
    }

    private mutating func longVarint(_ value: UInt64) {
        reserve(10)
        var remaining = value
        while remaining >= 0x80 {
            base.storeBytes(of: UInt8(truncatingIfNeeded: remaining) | 0x80, toByteOffset: written, as: UInt8.self)
            written += 1
            remaining >>= 7
        }
        base.storeBytes(of: UInt8(remaining), toByteOffset: written, as: UInt8.self)
        written += 1
    }

    @inline(__always)
    mutating func count(_ value: Int) { varint(UInt64(value)) }

    mutating func int(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// A date (milliseconds since 1970): 8 bytes little-endian, read with one load.
    mutating func date(_ value: Int64) {
        reserve(8)
        base.storeBytes(of: UInt64(bitPattern: value).littleEndian, toByteOffset: written, as: UInt64.self)
        written += 8
    }

    /// A string: its number in the table when numbering, else written out in full.
    mutating func string(_ value: String) {
        if table != nil {
            count(table!.number(of: value))
        } else {
            fullString(value)
        }
    }

    /// A string that is the value of `field`, which a customer's versions mostly repeat:
    /// written as ``string(_:)`` writes it.
    mutating func string(_ value: String, repeating field: RepeatedField) {
        if table != nil {
            count(table!.number(of: value, repeating: field))
        } else {
            fullString(value)
        }
    }

    /// A string written out in full: a byte count and UTF-8.
    mutating func fullString(_ value: String) {
        let utf8 = value.utf8
        let length = utf8.count
        count(length)
        reserve(length)
        let destination = base + written
        let copied: Void? = utf8.withContiguousStorageIfAvailable { source in
            if let start = source.baseAddress { destination.copyMemory(from: start, byteCount: length) }
        }
        if copied == nil {
            for (offset, byte) in utf8.enumerated() { destination.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self) }
        }
        written += length
    }

    /// The bytes of `other` as they are.
    mutating func append(_ other: borrowing ByteWriter) {
        reserve(other.written)
        (base + written).copyMemory(from: other.base, byteCount: other.written)
        written += other.written
    }

    mutating func ref(_ ref: RawRef) {
        int(ref.eventSeq)
        byte(ref.slot.rawValue)
    }
}
