/// Appends the codec's primitive values to a byte array.
///
/// Unsigned integers are LEB128 varints; signed ones are zigzag varints;
/// dates are 8 bytes little-endian; strings are a varint byte count and
/// their UTF-8 bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func varint(_ value: UInt64) {
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
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String) {
        let utf8 = value.utf8
        count(utf8.count)
        bytes.append(contentsOf: utf8)
    }

    mutating func ref(_ ref: RawRef) {
        int(ref.eventSeq)
        byte(ref.slot.rawValue)
    }
}
