/// One input document as read, bounded: `bytes` holds at most the engine's
/// limit (plus one byte), `size` is how large the whole input was.
public struct InputBytes: Sendable {
    public var bytes: [UInt8]
    public var size: Int
    /// The document's 1-based number in its input (an NDJSON line number, blank lines
    /// counted), echoed as `input` in its results; `nil`: its position in the batch.
    public var number: Int?
    /// The input was not read to its end (it ran on far past the limit): it is
    /// at least `size` bytes long.
    public var sizeIsLowerBound = false

    public init(bytes: [UInt8], size: Int? = nil, number: Int? = nil) {
        self.bytes = bytes
        self.size = size ?? bytes.count
        self.number = number
    }

    public init(_ text: String) { self.init(bytes: Array(text.utf8)) }
}
