/// The change feed's reported answer in the engine's binary codec, as the store keeps
/// it: a format byte, a count, then each active entitlement by name order: its name,
/// and its `expiresDate` (a flag byte, then the date when there is one).
extension ReportedAnswer {
    static let formatVersion: UInt8 = 1

    /// The answer's bytes.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + 24 * active.count)
        writer.byte(Self.formatVersion)
        writer.count(active.count)
        for name in active.keys.sorted(by: { $0.utf8Precedes($1) }) {
            writer.fullString(name)
            if let expires = active[name] ?? nil {
                writer.byte(1)
                writer.date(expires)
            } else {
                writer.byte(0)
            }
        }
        return writer.bytes
    }

    /// The answer whose bytes are `bytes` (from ``encoded()``).
    /// - Throws: ``CodecError`` for bytes that are not such an answer.
    public init(encoded bytes: [UInt8]) throws(CodecError) {
        self = try withRawBytes(bytes) { buffer throws(CodecError) -> ReportedAnswer in
            var reader = ByteReader(buffer)
            let version = try reader.byte()
            guard version == Self.formatVersion else {
                throw CodecError(code: .unsupportedVersion, offset: 0, message: "reported answer format version \(version)")
            }
            var active: [String: Int64?] = [:]
            for _ in 0..<(try reader.count()) {
                let name = try reader.string()
                active[name] = .some(try reader.bool() ? try reader.date() : nil)
            }
            try reader.finish()
            return ReportedAnswer(active: active)
        }
    }
}
