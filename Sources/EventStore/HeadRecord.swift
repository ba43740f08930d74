import EntitlementCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The head record: the log's head (sequence number and hash), written beside the
/// database by every commit that appends (``recordHead(_:)``, from the append) and read
/// back by the audit (``recordedHead()``), which then knows how far the log must reach.
extension EventStore {
    /// Lowercase hex of `bytes`: how a head's hash is written.
    static func hex(_ bytes: [UInt8]) -> String {
        // Two digits a byte, written in place (a string a byte, joined, cost ~30,000
        // instructions a commit of one notification).
        String(unsafeUninitializedCapacity: bytes.count * 2) { digits in
            for (index, byte) in bytes.enumerated() {
                digits[2 * index] = hexDigits[Int(byte >> 4)]
                digits[2 * index + 1] = hexDigits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Where the engine records the log's head (sequence number and hash) after
    /// every commit that appends: beside the database, outside it, so that deleting
    /// the newest events from the database does not delete the record of them.
    public var headRecordPath: String { path + "-head" }

    /// The head recorded at the last commit, or `nil` when there is no record.
    public func recordedHead() -> LogHead? {
        let fd = open(headRecordPath, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return LogHead(Self.trimmed(buffer[0..<count]))
    }

    /// The record's text without the whitespace around it. The record is ASCII (written
    /// `SEQ:HASH` and a newline), trimmed here byte by byte; a record that holds other
    /// bytes is trimmed by Foundation, of every Unicode space and newline (as before).
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // ASCII's whitespace and newlines, as Foundation's set holds them: tab, line feed,
        // vertical tab, form feed, carriage return, space (and U+0085, not ASCII).
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// Records `head` beside the database, unless the record already names a
    /// later head (another process committed after this one). Written to a
    /// temporary file and renamed, so the record is never torn; a failure to write
    /// it (a full disk) leaves the previous record, which still names a head the
    /// log must reach.
    func recordHead(_ head: LogHead) {
        if let recorded = recordedHead(), recorded.seq >= head.seq { return }
        writeHeadRecord(head)
    }

    /// Makes the head record name the log's own head (or removes it for an empty log),
    /// whatever it named before, and returns that head: for `recover`, once it has reported
    /// how many events a restored database lacks, so that the events caught up from Apple,
    /// which take the missing events' sequence numbers, are recorded from there on.
    /// - Throws: ``StoreError`` when the log cannot be read or the record cannot be written.
    @discardableResult
    public func resetHeadRecord() throws(StoreError) -> LogHead? {
        try requireWritable()
        let head: LogHead? = try mapped {
            let statement = try connection.prepare("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return LogHead(seq: statement.int64(0), hash: Self.hex(statement.blob(1) ?? []))
        }
        guard let head else {
            if unlink(headRecordPath) != 0 && errno != ENOENT {
                throw StoreError(code: .cannotOpen, message: "cannot remove the head record \(headRecordPath): \(String(cString: strerror(errno)))")
            }
            return nil
        }
        guard writeHeadRecord(head) else {
            throw StoreError(code: .cannotOpen, message: "cannot write the head record \(headRecordPath): \(String(cString: strerror(errno)))")
        }
        return head
    }

    /// Writes `head` as the record (a temporary file renamed over it); false when that failed.
    @discardableResult
    private func writeHeadRecord(_ head: LogHead) -> Bool {
        // A name of its own (engines in one process, or in several, may record at once).
        let temporary = headRecordPath + ".\(getpid()).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return false }
        let bytes = Array((head.description + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written == bytes.count, rename(temporary, headRecordPath) == 0 { return true }
        unlink(temporary)
        return false
    }
}
