extension String {
    /// Whether `self` sorts before `other` by their UTF-8 bytes, as `memcmp`
    /// would order them (the specification's "greater raw JWS string").
    ///
    /// Raw JWS run to kilobytes; this compares words of eight bytes where the
    /// generic `lexicographicallyPrecedes` walks byte by byte.
    func utf8Precedes(_ other: String) -> Bool { utf8Order(other) < 0 }

    /// The order of `self` and `other` by their UTF-8 bytes, as `memcmp` then the
    /// lengths give it: negative when `self` sorts first, zero when the bytes are equal,
    /// positive when `other` sorts first. One pass answers both "equal?" and "which
    /// first?" (two raw JWS of one certificate share kilobytes of header).
    func utf8Order(_ other: String) -> Int {
        let fast: Int?? = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in Self.bytesOrder(lhs, rhs) }
        }
        if let fast, let result = fast { return result }
        if utf8.elementsEqual(other.utf8) { return 0 }
        return utf8.lexicographicallyPrecedes(other.utf8) ? -1 : 1
    }

    private static func bytesOrder(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Int {
        let common = Swift.min(lhs.count, rhs.count)
        var index = 0
        if common >= 8, let left = lhs.baseAddress, let right = rhs.baseAddress {
            let leftRaw = UnsafeRawPointer(left)
            let rightRaw = UnsafeRawPointer(right)
            // 32 bytes a step while they agree, then the first differing word of eight.
            while index + 32 <= common {
                var differ: UInt64 = 0
                for offset in stride(from: 0, to: 32, by: 8) {
                    differ |= leftRaw.loadUnaligned(fromByteOffset: index + offset, as: UInt64.self)
                        ^ rightRaw.loadUnaligned(fromByteOffset: index + offset, as: UInt64.self)
                }
                if differ != 0 { break }
                index += 32
            }
            while index + 8 <= common {
                let a = leftRaw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let b = rightRaw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // Read as big-endian, the first differing byte decides, as in memcmp.
                if a != b { return UInt64(bigEndian: a) < UInt64(bigEndian: b) ? -1 : 1 }
                index += 8
            }
        }
        while index < common {
            if lhs[index] != rhs[index] { return lhs[index] < rhs[index] ? -1 : 1 }
            index += 1
        }
        return lhs.count == rhs.count ? 0 : (lhs.count < rhs.count ? -1 : 1)
    }
}

extension String {
    /// The first 16 bytes of the UTF-8 form as two big-endian words, zero-padded: two
    /// strings whose words differ are ordered as their words are (``utf8Precedes(_:)``);
    /// equal words leave the order to the whole strings.
    var utf8Prefix: (UInt64, UInt64) {
        let loaded: (UInt64, UInt64)? = utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= 16, let base = bytes.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base)
            return (
                UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        } ?? nil
        if let loaded { return loaded }
        var words: (UInt64, UInt64) = (0, 0)
        for (position, byte) in utf8.prefix(16).enumerated() {
            if position < 8 {
                words.0 |= UInt64(byte) << (56 - 8 * position)
            } else {
                words.1 |= UInt64(byte) << (56 - 8 * (position - 8))
            }
        }
        return words
    }
}

extension Collection where Element == String {
    /// The positions of the strings in the order of ``String/utf8Precedes(_:)``: each
    /// string's first 16 bytes read once (``String/utf8Prefix``), compared as integers, the
    /// whole strings only where those are equal. Sorting a dictionary's ids by comparing
    /// the strings read each one's bytes again at every comparison.
    func indicesInUTF8Order() -> [Index] {
        var entries: [(first: UInt64, second: UInt64, index: Index)] = []
        entries.reserveCapacity(count)
        for index in indices {
            let words = self[index].utf8Prefix
            entries.append((words.0, words.1, index))
        }
        entries.sort { lhs, rhs in
            if lhs.first != rhs.first { return lhs.first < rhs.first }
            if lhs.second != rhs.second { return lhs.second < rhs.second }
            return self[lhs.index].utf8Precedes(self[rhs.index])
        }
        return entries.map(\.index)
    }
}
