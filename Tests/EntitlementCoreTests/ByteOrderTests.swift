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
    /// The three-way order agrees with the bytes' `lexicographicallyPrecedes` and equality,
    /// for strings that share long prefixes (as two raw JWS of one certificate do) and
    /// differ before, at and after each 8- and 32-byte step, or only in length.
    @Test func utf8OrderIsTheOrderOfTheBytes() {
        var random = SplitMix64(seed: 0x0BDE)
        let alphabet: [UInt8] = Array("AZaz09-_.".utf8) + [0x00, 0x7F]
        for _ in 0..<20_000 {
            let length = random.index(130)
            var left = (0..<length).map { _ in alphabet[random.index(alphabet.count)] }
            var right = left
            switch random.index(4) {
            case 0: break
            case 1 where length > 0: right[random.index(length)] = alphabet[random.index(alphabet.count)]
            case 2: right.append(contentsOf: (0...random.index(40)).map { _ in alphabet[random.index(alphabet.count)] })
            default: left = Array(left.prefix(random.index(length + 1)))
            }
            if random.index(2) == 0 { swap(&left, &right) }
            let a = String(decoding: left, as: UTF8.self)
            let b = String(decoding: right, as: UTF8.self)
            let expected = left == right ? 0 : (left.lexicographicallyPrecedes(right) ? -1 : 1)
            #expect(a.utf8Order(b) == expected)
            #expect(b.utf8Order(a) == -expected)
            #expect(a.utf8Precedes(b) == (expected < 0))
        }
        #expect("é".utf8Order("e\u{301}") == 1)  // canonically equal, but not the same bytes
    }
}
