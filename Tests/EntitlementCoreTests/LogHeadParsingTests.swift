import EntitlementCore
import Testing

/// `LogHead("SEQ:HASH")`, which reads ASCII text byte by byte, reads every text as the
/// character-by-character reading does: random texts near the form (signs, colons, hex
/// digits of both cases, fullwidth digits, spaces, hashes of 63 to 65 digits).
@Suite struct LogHeadParsingTests {
    /// The reading character by character, as the reference.
    static func reference(_ text: String) -> LogHead? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let seq = Int64(parts[0]), seq >= 0, parts[1].count == 64,
            parts[1].allSatisfy({ $0.isHexDigit })
        else { return nil }
        return LogHead(seq: seq, hash: String(parts[1]))
    }

    @Test func everyTextIsReadAsCharacterByCharacter() {
        var state: UInt64 = 0x10_6EAD
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        let hexDigits = Array("0123456789abcdefABCDEF")
        let oddities: [String] = ["g", " ", ":", "-", "+", "０", "Ａ", "é", "\r\n", "\n", "9223372036854775808"]
        var parsed = 0
        var refused = 0
        for _ in 0..<20_000 {
            var seq = ["", "+", "-", ""][next(4)] + String(next(1_000_000))
            if next(10) == 0 { seq = oddities[next(oddities.count)] + seq }
            var hash = (0..<(63 + next(3))).map { _ in String(hexDigits[next(hexDigits.count)]) }
            if next(4) == 0, !hash.isEmpty { hash[next(hash.count)] = oddities[next(oddities.count)] }
            let text = seq + (next(20) == 0 ? "::" : ":") + hash.joined()
            let expected = Self.reference(text)
            #expect(LogHead(text) == expected, "\(text)")
            if expected == nil { refused += 1 } else { parsed += 1 }
        }
        #expect(parsed > 1_000 && refused > 1_000)
        // Fullwidth hex digits count as hex digits, as characters read them.
        let fullwidth = "7:" + String(repeating: "０", count: 64)
        #expect(LogHead(fullwidth) != nil && LogHead(fullwidth) == Self.reference(fullwidth))
        #expect(LogHead("12:" + String(repeating: "AB", count: 32))?.hash == String(repeating: "ab", count: 32))
    }
}
