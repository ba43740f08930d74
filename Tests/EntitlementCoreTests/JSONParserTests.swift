import EntitlementCore
import Testing

/// The parser's string scanning reads eight bytes at a time: every special
/// byte must be found wherever it falls within a word.
@Suite("JSON parser")
struct JSONParserTests {
    func parsed(_ text: String) throws -> JSONValue { try JSONParser().parse(text) }

    func rejects(_ bytes: [UInt8]) -> Bool {
        (try? JSONParser().parse(bytes)) == nil
    }

    @Test func specialBytesAreFoundAtEveryOffset() throws {
        for prefix in 0..<20 {
            let plain = String(repeating: "a", count: prefix)
            for suffix in [0, 1, 7, 8, 9, 30] {
                let tail = String(repeating: "Z", count: suffix)
                #expect(try parsed("\"\(plain)\(tail)\"") == .string(plain + tail))
                #expect(try parsed("\"\(plain)\\\"\(tail)\"") == .string(plain + "\"" + tail))
                #expect(try parsed("\"\(plain)\\\\\(tail)\"") == .string(plain + "\\" + tail))
                #expect(try parsed("\"\(plain)\\u00e9\(tail)\"") == .string(plain + "é" + tail))
                #expect(try parsed("\"\(plain)é\(tail)\"") == .string(plain + "é" + tail))
                // A raw control character, an invalid UTF-8 byte, a missing closing quote.
                #expect(rejects(Array("\"\(plain)".utf8) + [0x0A] + Array("\(tail)\"".utf8)))
                #expect(rejects(Array("\"\(plain)".utf8) + [0x1F] + Array("\(tail)\"".utf8)))
                #expect(rejects(Array("\"\(plain)".utf8) + [0xFF] + Array("\(tail)\"".utf8)))
                #expect(rejects(Array("\"\(plain)\(tail)".utf8)))
            }
        }
    }

    @Test func aNestedJWSSizedStringKeepsEveryByte() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
        let segment = String((0..<5_000).map { alphabet[$0 % alphabet.count] })
        let text = "{\"signedTransactionInfo\":\"\(segment)\",\"x\":1}"
        #expect(try parsed(text)["signedTransactionInfo"] == .string(segment))
        #expect(try parsed(text)["x"] == .int(1))
        // Bytes 0x7F and space are plain; DEL next to a quote still ends the string right.
        #expect(try parsed("\"\u{7F} \u{7F}\"") == .string("\u{7F} \u{7F}"))
    }

    @Test func strictRulesHold() {
        #expect(rejects(Array("{\"a\":1,\"a\":2}".utf8)))
        #expect(rejects(Array("01".utf8)))
        #expect(rejects(Array("\"\\ud800\"".utf8)))
        #expect(rejects(Array("[1] x".utf8)))
        #expect(rejects(Array(String(repeating: "[", count: 65).utf8) + Array(String(repeating: "]", count: 65).utf8)))
    }

    /// Duplicate keys are refused in objects of every size, both where the parser
    /// compares keys one by one (up to 32 members) and where it keeps a set.
    @Test func duplicateKeysAreRefusedAtEveryPositionAndSize() throws {
        for size in [2, 3, 16, 17, 31, 32, 33, 40] {
            // Keys of equal and of different lengths, some sharing prefixes.
            let keys = (0..<size).map { $0 % 3 == 0 ? "k\($0)" : "key-\($0 % 7)-\($0)" }
            let members = keys.enumerated().map { "\"\($0.element)\":\($0.offset)" }
            let unique = try JSONParser().parse(Array("{\(members.joined(separator: ","))}".utf8))
            #expect(unique[keys[size - 1]] == .int(Int64(size - 1)), "size \(size)")
            for repeated in 0..<size {
                let text = "{\(members.joined(separator: ",")),\"\(keys[repeated])\":0}"
                #expect(rejects(Array(text.utf8)), "size \(size), key \(repeated) repeated last")
            }
            // A key equal in length to an earlier one but different is no duplicate.
            let sameLength = "{\(members.joined(separator: ",")),\"\(String(repeating: "z", count: keys[0].utf8.count))\":0}"
            #expect(!rejects(Array(sameLength.utf8)), "size \(size)")
        }
    }

    /// Object lookups skip members whose key has another length: keys of equal length,
    /// keys that are prefixes of others, and non-ASCII keys are still told apart.
    @Test func objectLookupsFindExactlyTheirKey() throws {
        let json = try JSONParser().parse(Array(#"{"ab":1,"ba":2,"abc":3,"a":4,"é":5,"e":6,"":7}"#.utf8))
        #expect(json["ab"] == .int(1))
        #expect(json["ba"] == .int(2))
        #expect(json["abc"] == .int(3))
        #expect(json["a"] == .int(4))
        #expect(json["é"] == .int(5))
        #expect(json["e"] == .int(6))
        #expect(json[""] == .int(7))
        #expect(json["b"] == nil)
        #expect(json["abcd"] == nil)
        #expect(json["ac"] == nil)
    }

    /// What may stand between quotes as it is: exactly the bytes the parser's string
    /// fast path takes, at every offset of the eight-byte words.
    @Test func plainStringContentIsTold() {
        for length in 0..<20 {
            let plain = Array(repeating: UInt8(ascii: "a"), count: length)
            #expect(plain.withUnsafeBufferPointer { JSONParser.isPlainStringContent($0) })
            for offset in 0..<length {
                for special: UInt8 in [0x22, 0x5C, 0x00, 0x1F, 0x80, 0xC3] {
                    var bytes = plain
                    bytes[offset] = special
                    #expect(!bytes.withUnsafeBufferPointer { JSONParser.isPlainStringContent($0) }, "\(special) at \(offset) of \(length)")
                }
                var tilde = plain
                tilde[offset] = 0x7E
                #expect(tilde.withUnsafeBufferPointer { JSONParser.isPlainStringContent($0) })
            }
        }
    }

    /// Long strings are read by finding their closing quote first: a backslash, a control
    /// character or a non-ASCII byte anywhere before it, and a quote that a backslash escapes,
    /// are judged as byte by byte, with the same offsets in the errors.
    @Test func longStringsAreJudgedAsByteByByte() throws {
        func refusal(_ bytes: [UInt8]) -> String? {
            do { _ = try JSONParser().parse(bytes); return nil } catch { return "\(error.offset): \(error.reason)" }
        }
        let plain = String(repeating: "Ab0-_", count: 1_000)
        for position in [0, 1, 7, 8, 2_999, 4_999] {
            let before = String(plain.prefix(position))
            let after = String(plain.dropFirst(position))
            #expect(try parsed("[\"\(before)\\\"\(after)\"]") == .array([.string(before + "\"" + after)]))
            #expect(try parsed("[\"\(before)\\n\(after)\",1]") == .array([.string(before + "\n" + after), .int(1)]))
            #expect(try parsed("\"\(before)ü\(after)\"") == .string(before + "ü" + after))
            for refused: UInt8 in [0x00, 0x0A, 0x1F] {
                let bytes = Array("\"\(before)".utf8) + [refused] + Array("\(after)\"".utf8)
                #expect(refusal(bytes) == "\(position + 1): control character in string")
            }
            let invalid = Array("\"\(before)".utf8) + [0xFF] + Array("\(after)\"".utf8)
            #expect(refusal(invalid) == "1: invalid UTF-8 in string")
        }
        #expect(refusal(Array("\"\(plain)".utf8)) == "5001: unterminated string")
        #expect(refusal(Array("\"\(plain)\\".utf8)) == "5002: unterminated escape")
    }
}
