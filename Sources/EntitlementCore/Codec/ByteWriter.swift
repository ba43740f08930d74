/// Appends the codec's primitive values to a byte array.
///
/// Unsigned integers are LEB128 varints; signed ones are zigzag varints;
/// dates are 8 bytes little-endian; strings are a varint byte count and
/// their UTF-8 bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8]
    /// When set (``StateCodec`` format 2), strings are written as numbers into
    /// this table, which the caller writes out in full before the body.
    private(set) var table: StringTableBuilder?

    init(capacity: Int = 128, numberingStrings: Bool = false) {
        bytes = []
        bytes.reserveCapacity(capacity)
        table = numberingStrings ? StringTableBuilder() : nil
    }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// One byte is the common case (flags, counts, string numbers): appended inline.
    @inline(__always)
    mutating func varint(_ value: UInt64) {
        if value < 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value))
        } else {
            longVarint(value)
        }
    }

    private mutating func longVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        bytes.append(UInt8(remaining))
    }

    mutating func count(_ value: Int) { varint(UInt64(value)) }

    mutating func int(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// A date (milliseconds since 1970): 8 bytes little-endian, read with one load.
    mutating func date(_ value: Int64) {
        // Byte by byte: appending the value's 8 bytes as a buffer costs a call to memcpy.
        let bits = UInt64(bitPattern: value)
        bytes.append(UInt8(truncatingIfNeeded: bits))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 8))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 16))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 24))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 32))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 40))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 48))
        bytes.append(UInt8(truncatingIfNeeded: bits >> 56))
    }

    /// A string: its number in the table when numbering, else written out in full.
    mutating func string(_ value: String) {
        if table != nil {
            count(table!.number(of: value))
        } else {
            fullString(value)
        }
    }

    /// A string written out in full: a byte count and UTF-8.
    mutating func fullString(_ value: String) {
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            count(utf8.count)
            bytes.append(contentsOf: utf8)
        }
        if copied == nil {
            count(value.utf8.count)
            bytes.append(contentsOf: value.utf8)
        }
    }

    /// Bytes as they are.
    mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    mutating func ref(_ ref: RawRef) {
        int(ref.eventSeq)
        byte(ref.slot.rawValue)
    }
}
