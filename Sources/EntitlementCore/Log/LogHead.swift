/// The newest event of the log: its sequence number and chained hash (hex), as
/// `audit` prints them (`headSeq`, `headHash`) and `--expect-head SEQ:HASH` takes them.
public struct LogHead: Sendable, Hashable, CustomStringConvertible {
    public var seq: Int64
    public var hash: String

    public init(seq: Int64, hash: String) {
        self.seq = seq
        self.hash = hash.lowercased()
    }

    /// Parses `SEQ:HASH` (a sequence number and 64 hex digits); `nil` when malformed.
    public init?(_ text: String) {
        // ASCII text (what the engine writes) is read byte by byte; other text character
        // by character, where hex digits include their fullwidth forms.
        var copy = text
        switch copy.withUTF8({ Self.parsed(ascii: $0) }) {
        case .parsed(let head): self = head
        case .malformed: return nil
        case .notASCII: self.init(characters: text)
        }
    }

    private enum ASCIIParse {
        case parsed(LogHead)
        case malformed
        case notASCII
    }

    /// `SEQ:HASH` read from ASCII bytes: one colon, a sequence number as `Int64` reads
    /// one (a sign allowed) and not negative, 64 hex digits.
    private static func parsed(ascii bytes: UnsafeBufferPointer<UInt8>) -> ASCIIParse {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return .notASCII }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), !bytes[(colon + 1)...].contains(UInt8(ascii: ":")),
            let seq = Int64(String(decoding: UnsafeBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self)), seq >= 0,
            bytes.count - colon - 1 == 64
        else { return .malformed }
        let hash = UnsafeBufferPointer(rebasing: bytes[(colon + 1)...])
        for byte in hash {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): continue
            default: return .malformed
            }
        }
        // Lowercased by `init(seq:hash:)`.
        return .parsed(LogHead(seq: seq, hash: String(decoding: hash, as: UTF8.self)))
    }

    /// `SEQ:HASH` read character by character.
    private init?(characters text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let seq = Int64(parts[0]), seq >= 0, parts[1].count == 64,
            parts[1].allSatisfy({ $0.isHexDigit })
        else { return nil }
        self.init(seq: seq, hash: String(parts[1]))
    }

    public var description: String { "\(seq):\(hash)" }
}
