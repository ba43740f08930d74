@testable import EntitlementCore
import Testing
import TestSupport

/// The codec writes a state's ids in the order of their UTF-8 bytes; sorting them by their
/// first 16 bytes as integers, then by the whole strings, gives that order.
@Suite("Byte order")
struct ByteOrderTests {
    /// Ids of every kind the order must hold for: Apple's 16-digit ids, shorter and longer
    /// ones, ids equal in their first 16 bytes, empty, NUL and non-ASCII characters, and
    /// strings that are not contiguous UTF-8 (a Substring's copy is, a bridged one may not be).
    static func randomIds(_ random: inout SplitMix64) -> [String] {
        let alphabet: [String] = ["0", "1", "9", "a", "\u{0}", "é", "\u{7F}", "𝄞", "z"]
        var ids: [String] = []
        for _ in 0..<random.int(0...24) {
            switch random.below(5) {
            case 0: ids.append(String(2_000_000_000_000_000 + random.below(1_000)))
            case 1: ids.append("2000000000000000" + String(random.below(100)))
            case 2: ids.append(String((0..<random.int(0...20)).map { _ in Character(random.pick(alphabet)) }))
            case 3: ids.append(String(random.below(10_000)))
            default: ids.append(ids.last.map { $0 + random.pick(alphabet) } ?? "")
            }
        }
        return ids
    }

    @Test func indicesInUTF8OrderSortAsTheStringsBytesDo() {
        var random = SplitMix64(seed: 0xB17E)
        for _ in 0..<2_000 {
            let ids = Self.randomIds(&random)
            let expected = ids.sorted { $0.utf8Precedes($1) }
            #expect(ids.indicesInUTF8Order().map { ids[$0] } == expected)
            // A dictionary's keys, as the state codec sorts them.
            var table: [String: Int] = [:]
            for (offset, id) in ids.enumerated() { table[id] = offset }
            let keys = table.keys
            #expect(keys.indicesInUTF8Order().map { keys[$0] } == Array(Set(ids)).sorted { $0.utf8Precedes($1) })
        }
    }

    @Test func aPrefixIsTheFirstSixteenBytesBigEndianZeroPadded() {
        #expect("".utf8Prefix == (0, 0))
        #expect("a".utf8Prefix == (0x6100_0000_0000_0000, 0))
        #expect("0123456789abcdefXYZ".utf8Prefix == (0x3031_3233_3435_3637, 0x3839_6162_6364_6566))
        #expect("é".utf8Prefix == (0xC3A9_0000_0000_0000, 0))
    }
}
