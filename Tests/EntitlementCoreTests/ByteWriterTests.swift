@testable import EntitlementCore
import Testing

/// The codec's writer keeps its bytes in memory of its own and grows it: what it
/// writes past its first capacity is the same as what fits in it.
@Suite("Byte writer")
struct ByteWriterTests {
    @Test func valuesWrittenPastTheFirstCapacityAreTheCodecsBytes() throws {
        var writer = ByteWriter(capacity: 1)
        var expected: [UInt8] = []
        for index in 0..<2_000 {
            let value = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 >> UInt64(index % 64)
            writer.varint(value)
            var remaining = value
            while remaining >= 0x80 {
                expected.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
                remaining >>= 7
            }
            expected.append(UInt8(remaining))

            let moment = Int64(bitPattern: value) &- 1_700_000_000_000
            writer.date(moment)
            withUnsafeBytes(of: moment.littleEndian) { expected.append(contentsOf: $0) }

            writer.int(-Int64(index))
            let zigzag = UInt64(bitPattern: (-Int64(index) << 1) ^ (-Int64(index) >> 63))
            if zigzag < 0x80 { expected.append(UInt8(zigzag)) } else {
                expected.append(UInt8(truncatingIfNeeded: zigzag) | 0x80)
                expected.append(UInt8(zigzag >> 7))
            }

            // Short, inline, long and non-ASCII strings, some longer than the writer's first guess.
            let text = index % 3 == 0 ? "é" + String(repeating: "x", count: index % 300) : "id\(index)"
            writer.fullString(text)
            let utf8 = Array(text.utf8)
            if utf8.count < 0x80 { expected.append(UInt8(utf8.count)) } else {
                expected.append(UInt8(truncatingIfNeeded: utf8.count) | 0x80)
                expected.append(UInt8(utf8.count >> 7))
            }
            expected += utf8
            writer.byte(UInt8(truncatingIfNeeded: index))
            expected.append(UInt8(truncatingIfNeeded: index))
        }
        #expect(writer.written == expected.count)
        #expect(writer.bytes == expected)

        // Appending one writer to another copies its bytes as they are.
        var out = ByteWriter(capacity: 3)
        out.byte(7)
        out.append(writer)
        #expect(out.bytes == [7] + expected)
    }

    @Test func numberedStringsAreTheirPlaceInTheTable() throws {
        var writer = ByteWriter(numberingStrings: true)
        let strings = (0..<300).map { "com.example.product.\($0 % 150)" }
        for string in strings { writer.string(string) }
        let table = try #require(writer.table?.strings)
        #expect(table == (0..<150).map { "com.example.product.\($0)" })
        var numbers: [UInt8] = []
        for index in 0..<300 {
            let number = index % 150
            if number < 0x80 { numbers.append(UInt8(number)) } else { numbers += [UInt8(number & 0x7F) | 0x80, UInt8(number >> 7)] }
        }
        #expect(writer.bytes == numbers)
    }
}
