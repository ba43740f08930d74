import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A prepared statement. Finalized when released; reset after each use by the
/// ``Connection`` helpers so it can be reused from the connection's cache.
public final class Statement {
    let handle: OpaquePointer
    unowned let connection: Connection
    public let sql: String
    /// Whether the statement was bound or stepped since its last reset: a reset of one
    /// that was not (the connection's cache resets each statement it hands out, and most
    /// users reset theirs when done) then costs nothing.
    private var used = false

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            throw SQLiteError(
                code: ResultCode(rawValue: code), message: connection.lastMessage, sql: sql, systemErrno: connection.lastSystemErrno)
        }
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func check(_ code: Int32) throws(SQLiteError) {
        guard code == SQLITE_OK else {
            throw SQLiteError(code: ResultCode(rawValue: code), message: connection.lastMessage, sql: sql, systemErrno: connection.lastSystemErrno)
        }
    }

    /// Clears bindings and resets so the statement can run again.
    public func reset() {
        guard used else { return }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        used = false
    }

    public func bind(_ index: Int32, _ value: Int64?) throws(SQLiteError) {
        used = true
        if let value { try check(sqlite3_bind_int64(handle, index, value)) } else { try check(sqlite3_bind_null(handle, index)) }
    }

    public func bind(_ index: Int32, _ value: String?) throws(SQLiteError) {
        used = true
        guard let value else { try check(sqlite3_bind_null(handle, index)); return }
        var copy = value
        let code = copy.withUTF8 { buffer -> Int32 in
            let base = UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
            return sqlite3_bind_text(handle, index, base, Int32(buffer.count), csqlite_transient())
        }
        try check(code)
    }

    /// Binds `text`, UTF-8 bytes, as TEXT (stored and read back byte for byte).
    public func bind(_ index: Int32, text: [UInt8]?) throws(SQLiteError) {
        used = true
        guard let text else { try check(sqlite3_bind_null(handle, index)); return }
        let code = text.withUnsafeBytes { buffer in
            sqlite3_bind_text(
                handle, index, (buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                Int32(buffer.count), csqlite_transient())
        }
        try check(code)
    }

    /// The column's text as its UTF-8 bytes, exactly as stored, or `nil` for NULL.
    public func textBytes(_ column: Int32) -> [UInt8]? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    public func bind(_ index: Int32, blob: [UInt8]?) throws(SQLiteError) {
        used = true
        guard let blob else { try check(sqlite3_bind_null(handle, index)); return }
        let code = blob.withUnsafeBytes { buffer in
            sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), csqlite_transient())
        }
        try check(code)
    }

    /// Steps once: `true` when a row is available, `false` when done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        used = true
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError(
                code: ResultCode(rawValue: sqlite3_extended_errcode(connection.handle)), message: connection.lastMessage, sql: sql,
                systemErrno: connection.lastSystemErrno)
            sqlite3_reset(handle)
            throw error
        }
    }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    /// Whether the column holds text (as opposed to a blob, a number or NULL).
    public func isText(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_TEXT }

    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    /// Whether the column holds an integer.
    public func isInteger(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_INTEGER }

    /// Whether the column holds a blob.
    public func isBlob(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_BLOB }

    public func string(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// Whether the column's text is exactly the UTF-8 of `text`, without making a String of it.
    public func text(_ column: Int32, equals text: String) -> Bool {
        guard let pointer = sqlite3_column_text(handle, column) else { return false }
        let count = Int(sqlite3_column_bytes(handle, column))
        var copy = text
        return copy.withUTF8 { utf8 in
            utf8.count == count && (count == 0 || memcmp(utf8.baseAddress!, pointer, count) == 0)
        }
    }

    public func blob(_ column: Int32) -> [UInt8]? {
        guard let pointer = sqlite3_column_blob(handle, column) else {
            return isNull(column) ? nil : []
        }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Calls `body` with the column's bytes without copying them (valid only inside `body`).
    public func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }
}
