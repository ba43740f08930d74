internal import EventStore

/// A rejected input as the quarantine keeps it (`GET /rejections`): when it arrived,
/// the error code and message it was rejected with, and its first bytes.
public struct RejectedInput: Sendable, Equatable {
    /// The quarantine row's number: larger is later.
    public var id: Int64
    /// When it was received (milliseconds since 1970).
    public var receivedAt: Int64
    /// The error code (``VerificationError``'s, or `NOT_KEPT` for a summary of inputs past the quarantine bound).
    public var code: String
    public var message: String
    /// The rejected item's size in bytes as received: the JWS taken from the document when
    /// there is one, else the document or line itself.
    public var size: Int64
    /// The quarantine's key for the item, lowercase hex: SHA-256 of its bytes as kept, a zero
    /// byte and ``size`` in decimal digits (the quarantine keeps each distinct item once).
    public var sha256: String
    /// The first bytes of the item (at most ``Engine/rejectionExcerptBytes``), as UTF-8 with
    /// invalid sequences replaced.
    public var excerpt: String

    /// The object `GET /rejections` lists.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("id", .int(id)), ("receivedAt", .int(receivedAt)), ("code", .string(code)), ("message", .string(message)),
                ("size", .int(size)), ("sha256", .string(sha256)), ("excerpt", .string(excerpt)),
            ]))
    }
}

extension Engine {
    /// How many bytes of each input `rejections(limit:)` shows.
    public static let rejectionExcerptBytes = 160

    /// The latest rejected inputs kept in the quarantine, newest first.
    /// - Parameter limit: at most this many (1 or more).
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func rejections(limit: Int) throws(EngineError) -> [RejectedInput] {
        do {
            let rows = try readers.withReader { store throws(StoreError) in
                try store.latestQuarantine(limit: max(1, limit), headBytes: Self.rejectionExcerptBytes)
            }
            let digits = Array("0123456789abcdef")
            return rows.map { row in
                RejectedInput(
                    id: row.id, receivedAt: row.receivedAt, code: row.code, message: row.message, size: row.size,
                    sha256: String(row.inputHash.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }),
                    excerpt: String(decoding: row.head, as: UTF8.self))
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// The latest rejected inputs, on the engine's threads.
    public func rejections(limit: Int) async throws(EngineError) -> [RejectedInput] {
        try await onEngineThread { () throws(EngineError) in try self.rejections(limit: limit) }
    }
}
