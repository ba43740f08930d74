import EntitlementCore

/// How a logged JWS's signature and a nested JWS's path are kept in their columns
/// (`events.signature`, `jws_nested.signature`, `jws_nested.path`).
///
/// Since migration 025 those columns take any type, and rows are written compact:
/// - a signature as its bytes (a BLOB, 64 B for ES256 instead of 86 B of text) when
///   its text is the canonical base64url of those bytes, so that encoding them again
///   gives back the text byte for byte; any other text is kept as text;
/// - a nested JWS's path as the number of its ``RawRef/Slot`` (1, 2, 3) when it is
///   one of ``StoredJWS/nestedPaths``, else as its text.
///
/// Rows written before (text) and after (bytes, numbers) are both read.
enum LogColumns {
    /// The form rows are written in.
    enum Form {
        /// Text only: the columns' declared type is `TEXT` (a log not migrated to 025 yet).
        case text
        /// Signatures as bytes and paths as numbers where that gives back their text.
        case compact
    }

    /// The form a connection's log takes: compact once migration 025 has made the
    /// columns `ANY`.
    static func form(on connection: Connection) throws -> Form {
        let statement = try connection.cached("SELECT type FROM pragma_table_info('jws_nested') WHERE name = 'signature'")
        defer { statement.reset() }
        guard try statement.step(), statement.string(0)?.uppercased() == "ANY" else { return .text }
        return .compact
    }

    /// The signature's bytes when `text` is their canonical base64url, else `nil`: the
    /// decoder is strict (the alphabet alone, no padding, the last character's unused bits
    /// zero), so a text it decodes is the encoding of what it decodes to.
    static func signatureBytes(_ text: String) -> [UInt8]? {
        Base64.decodeURL(Substring(text))
    }

    /// Binds a signature at `index` in `form`.
    static func bindSignature(_ statement: Statement, _ index: Int32, _ text: String, form: Form) throws {
        if form == .compact, let bytes = signatureBytes(text) {
            try statement.bind(index, blob: bytes)
        } else {
            try statement.bind(index, text)
        }
    }

    /// The signature's text from `column`: bytes encoded again, text as it is, `nil` for NULL.
    static func signature(_ statement: Statement, _ column: Int32) -> String? {
        if statement.isNull(column) { return nil }
        if statement.isText(column) { return statement.string(column) }
        return Base64.encodeURL(statement.blob(column) ?? [])
    }

    /// The number a nested JWS's path is kept as, when it is a known one.
    static func pathCode(_ path: String) -> Int64? {
        StoredJWS.nestedPaths.firstIndex { $0.path == path }.map { Int64(StoredJWS.nestedSlots[$0].rawValue) }
    }

    /// Binds a nested JWS's path at `index` in `form`.
    static func bindPath(_ statement: Statement, _ index: Int32, _ path: String, form: Form) throws {
        if form == .compact, let code = pathCode(path) {
            try statement.bind(index, code)
        } else {
            try statement.bind(index, path)
        }
    }

    /// A nested JWS's path from `column`: a number's path, or the text as it is.
    static func path(_ statement: Statement, _ column: Int32) -> String {
        if statement.isText(column) { return statement.string(column) ?? "" }
        let code = statement.int64(column)
        guard let slot = UInt8(exactly: code).flatMap(RawRef.Slot.init(rawValue:)), let path = StoredJWS.path(of: slot) else {
            return String(code)
        }
        return path
    }
}
