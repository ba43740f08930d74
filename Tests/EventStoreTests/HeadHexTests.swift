@testable import EventStore
import Testing

/// A head's hash is written as lowercase hex, two digits a byte, as SQLite's `hex()`
/// writes it (lowered): checked on random bytes of every length up to 64.
@Suite struct HeadHexTests {
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
}
