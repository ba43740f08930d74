import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One line of structured access log per request, written to a file descriptor (standard error by default).
///
/// `{"time":1763683200000,"client":"127.0.0.1","method":"GET","path":"/customers?at=","status":200,"bytes":412,"us":180}`:
/// the path keeps query names but not their values; `bytes` is the size of the answer's body;
/// `us` the microseconds from the request's first byte to the answer's last.
public final class AccessLog: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()

    public init(fileDescriptor: Int32 = 2) { self.fd = fileDescriptor }

    /// One request's line.
    public struct Entry: Sendable {
        public var client: String
        public var method: String?
        public var target: String?
        public var status: Int
        public var bytes: Int
        public var microseconds: Int64
    }

    /// The path of `target` with the values of its query removed, at most 256 bytes.
    public static func redacted(_ target: String) -> String {
        var path: Substring = target[...]
        var query: Substring? = nil
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            query = target[target.index(after: mark)...]
        }
        var text = String(path.prefix(256))
        if let query {
            let names = query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                String(pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").prefix(64) + "="
            }
            text += "?" + names.prefix(16).joined(separator: "&")
        }
        return text
    }

    public func write(_ entry: Entry) {
        var line: [UInt8] = []
        line += Array(#"{"time":\#(Int64(Date().timeIntervalSince1970 * 1000)),"client":"#.utf8)
        ServerResponse.appendJSONString(entry.client, to: &line)
        line += Array(#","method":"#.utf8)
        if let method = entry.method { ServerResponse.appendJSONString(method, to: &line) } else { line += Array("null".utf8) }
        line += Array(#","path":"#.utf8)
        if let target = entry.target { ServerResponse.appendJSONString(Self.redacted(target), to: &line) } else { line += Array("null".utf8) }
        line += Array(#","status":\#(entry.status),"bytes":\#(entry.bytes),"us":\#(entry.microseconds)}"#.utf8)
        line.append(0x0A)
        lock.lock()
        defer { lock.unlock() }
        var offset = 0
        while offset < line.count {
            let written = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, line.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
