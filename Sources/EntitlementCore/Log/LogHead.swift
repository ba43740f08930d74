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
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let seq = Int64(parts[0]), seq >= 0, parts[1].count == 64,
            parts[1].allSatisfy({ $0.isHexDigit })
        else { return nil }
        self.init(seq: seq, hash: String(parts[1]))
    }

    public var description: String { "\(seq):\(hash)" }
}
