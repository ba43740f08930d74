extension String {
    /// Whether `self` sorts before `other` by their UTF-8 bytes, as `memcmp`
    /// would order them (the specification's "greater raw JWS string").
    ///
    /// Raw JWS run to kilobytes; this compares eight bytes at a time where the
    /// generic `lexicographicallyPrecedes` walks byte by byte.
    func utf8Precedes(_ other: String) -> Bool {
        let fast: Bool?? = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in Self.bytesPrecede(lhs, rhs) }
        }
        if let fast, let result = fast { return result }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }

    private static func bytesPrecede(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = Swift.min(lhs.count, rhs.count)
        var index = 0
        if common >= 8, let left = lhs.baseAddress, let right = rhs.baseAddress {
            let leftRaw = UnsafeRawPointer(left)
            let rightRaw = UnsafeRawPointer(right)
            while index + 8 <= common {
                let a = leftRaw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let b = rightRaw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // Read as big-endian, the first differing byte decides, as in memcmp.
                if a != b { return UInt64(bigEndian: a) < UInt64(bigEndian: b) }
                index += 8
            }
        }
        while index < common {
            if lhs[index] != rhs[index] { return lhs[index] < rhs[index] }
            index += 1
        }
        return lhs.count < rhs.count
    }
}
