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
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

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
        return LogHead(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Records `head` beside the database, unless the record already names a
    /// later head (another process committed after this one). Written to a
    /// temporary file and renamed, so the record is never torn; a failure to write
    /// it (a full disk) leaves the previous record, which still names a head the
    /// log must reach.
    func recordHead(_ head: LogHead) {
        if let recorded = recordedHead(), recorded.seq >= head.seq { return }
        // A name of its own (engines in one process, or in several, may record at once).
        let temporary = headRecordPath + ".\(getpid()).\(UInt64.random(in: 0...UInt64.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return }
        let bytes = Array((head.description + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written == bytes.count, rename(temporary, headRecordPath) == 0 { return }
        unlink(temporary)
    }
}
