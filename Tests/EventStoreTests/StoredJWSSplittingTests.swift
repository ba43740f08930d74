import EntitlementCore
@testable import EventStore
import Testing
import TestSupport

/// The shortcuts the log's split of a verified JWS takes (the header met last placing
/// the first dot, the verifier's decoded payload placing the second, the nested JWS
/// found from the quotes that open JSON strings) give what a plain scan gives.
@Suite struct StoredJWSSplittingTests {
    /// Every `"needle"` in `haystack`, by a plain scan of each position.
    static func quotedOccurrences(of needle: [UInt8], in haystack: [UInt8]) -> [Int] {
        let quote = UInt8(ascii: "\"")
        guard !needle.isEmpty, haystack.count >= needle.count + 2 else { return [] }
        return (1...(haystack.count - needle.count - 1)).filter { at in
            haystack[at - 1] == quote && haystack[at + needle.count] == quote && Array(haystack[at..<at + needle.count]) == needle
        }
    }

    @Test func theQuotedSearchFindsWhatAPlainScanFinds() {
        var random = SplitMix64(seed: 0x5107)
        let alphabet = Array("a\"\".".utf8)
        var found = 0
        var twice = 0
        for round in 0..<4_000 {
            let needle = (0..<random.int(1..<4)).map { _ in alphabet[random.int(0..<alphabet.count)] }
            let haystack = (0..<random.int(2..<24)).map { _ in alphabet[random.int(0..<alphabet.count)] }
            let expected = Self.quotedOccurrences(of: needle, in: haystack)
            let got = needle.withUnsafeBufferPointer { StoredJWS.onlyQuotedOccurrence(of: $0, in: haystack) }
            let wanted = expected.count == 1 ? (expected[0], expected[0] + needle.count) : nil
            #expect(got?.start == wanted?.0 && got?.end == wanted?.1, "round \(round): \(String(decoding: needle, as: UTF8.self)) in \(String(decoding: haystack, as: UTF8.self))")
            if expected.count == 1 { found += 1 }
            if expected.count > 1 { twice += 1 }
        }
        // The random cases hold both kinds, and not only misses.
        #expect(found > 200 && twice > 50, "\(found) found once, \(twice) more than once")
        // Side by side, sharing the quote between them: twice.
        let needle = Array("ab".utf8)
        #expect(needle.withUnsafeBufferPointer { StoredJWS.onlyQuotedOccurrence(of: $0, in: Array("\"ab\"ab\"".utf8)) } == nil)
        #expect(needle.withUnsafeBufferPointer { StoredJWS.onlyQuotedOccurrence(of: $0, in: Array("x\"ab\"b".utf8)) }.map { [$0.start, $0.end] } == [2, 4])
    }

    @Test func aVerifiedPayloadAndTheLastHeaderSplitAsAScanSplits() throws {
        let payload = Array("{\"transactionId\":\"1\",\"note\":\"a.b\"}".utf8)
        let segment = Base64.encodeURL(payload)
        let header = Base64.encodeURL(Array("{\"alg\":\"ES256\",\"x5c\":[\"MII\"]}".utf8))
        let jws = header + "." + segment + ".c2ln"
        let scanned = try #require(StoredJWS.Parts(Substring(jws)))
        // The header is now the one met last; the decoded payload is the verifier's.
        let shortcut = try #require(StoredJWS.Parts(Substring(jws), decoded: payload))
        #expect(shortcut == scanned && shortcut.text == jws)
        #expect(shortcut.header == header && shortcut.payload == payload && shortcut.signature == "c2ln")

        // A header that begins with the one met last is not taken for it.
        let longer = header + "QQ." + segment + ".c2ln"
        #expect(StoredJWS.Parts(Substring(longer), decoded: payload)?.header == header + "QQ")
        // A decoded payload of another length: the scan decides (and decodes the segment).
        let other = Array("{}".utf8)
        #expect(StoredJWS.Parts(Substring(jws), decoded: other) == scanned)
        // Four parts stay unsplit, however the second dot was found.
        #expect(StoredJWS.Parts(Substring(jws + ".x"), decoded: payload) == nil)
        #expect(StoredJWS.Parts(Substring(header + "." + segment), decoded: payload) == nil)
        #expect(StoredJWS.Parts(Substring(header + "." + segment + "."), decoded: payload)?.signature == "")
    }
}
