@testable import EventStore
import Foundation
import Testing

/// The head record's text: a head's hash written as lowercase hex, two digits a byte, as
/// SQLite's `hex()` writes it (lowered), checked on random bytes of every length up to 64;
/// and the record read back trimmed as Foundation trims it, on random texts.
@Suite struct HeadRecordTextTests {
    @Test func headHashesAreLowercaseHexOfEveryByte() throws {
        let connection = try Connection(path: ":memory:", mode: .readWrite)
        let sqliteHex = try connection.prepare("SELECT lower(hex(?))")
        var state: UInt64 = 0x4E_AD
        for length in 0...64 {
            let bytes = (0..<length).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
            sqliteHex.reset()
            try sqliteHex.bind(1, blob: bytes)
            #expect(try sqliteHex.step())
            #expect(EventStore.hex(bytes) == (sqliteHex.string(0) ?? ""), "length \(length)")
        }
        #expect(EventStore.hex([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
    }

    @Test func recordsAreTrimmedAsFoundationTrimsThem() {
        // Every ASCII byte (controls, spaces, newlines), and some that are not ASCII:
        // U+0085 NEXT LINE, U+00A0 NO-BREAK SPACE, U+2028 LINE SEPARATOR, "é".
        let pieces: [[UInt8]] = (0..<0x80).map { [UInt8($0)] } + [[0xC2, 0x85], [0xC2, 0xA0], [0xE2, 0x80, 0xA8], [0xC3, 0xA9]]
        let spaces: [[UInt8]] = [[0x20], [0x09], [0x0A], [0x0B], [0x0C], [0x0D], [0x00]]
        var state: UInt64 = 0x7E1A
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var nonASCII = 0
        for _ in 0..<5_000 {
            var bytes: [UInt8] = []
            for _ in 0..<next(4) { bytes += spaces[next(spaces.count)] }
            for _ in 0..<next(12) { bytes += next(3) == 0 ? spaces[next(spaces.count)] : pieces[next(pieces.count)] }
            for _ in 0..<next(4) { bytes += next(40) == 0 ? pieces[0x80 + next(4)] : spaces[next(spaces.count)] }
            if bytes.contains(where: { $0 >= 0x80 }) { nonASCII += 1 }
            let expected = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(EventStore.trimmed(bytes[...]) == expected, "\(bytes)")
        }
        #expect(nonASCII > 100)
        #expect(EventStore.trimmed(Array("  12:ab\n".utf8)[...]) == "12:ab")
    }
}
