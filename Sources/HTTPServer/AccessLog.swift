import Foundation
import Synchronization
internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One line of structured access log per request, written to a file descriptor (standard error by default).
///
/// `{"time":1763683200000,"client":"127.0.0.1","method":"GET","path":"/customers?at=","status":200,"bytes":412,"us":180}`:
/// the path keeps query names but not their values; `bytes` is the size of the answer's body;
/// `us` the microseconds from the request's first byte to the answer's last.
///
/// Lines are gathered and written together, within ``flushMilliseconds`` of the first one
/// waiting (or at once when ``pendingLimit`` bytes wait), so a busy server makes one `write`
/// for many requests instead of one each; ``flush()`` writes what waits now (the server calls
/// it when it stops). A process killed outright loses at most the lines of that interval.
/// The waiting is done by a thread of the log's own, on a condition variable with a deadline:
/// nothing that needs a file descriptor, so a server out of descriptors still logs.
public final class AccessLog: @unchecked Sendable {
    /// How long a line may wait to be written with the ones after it.
    public let flushMilliseconds: Int
    /// Bytes waiting beyond which the thread adding a line writes them all at once.
    static let pendingLimit = 32 * 1024
    /// What the log and its writing thread share (the thread holds this, not the log,
    /// so a log no longer used ends its thread).
    private let lines: PendingLines
    /// Whether the writing thread was started (once, at the first line).
    private let started = Atomic<Bool>(false)

    /// - Parameter flushMilliseconds: how long a line may wait for others to be written with it (0: each at once).
    public init(fileDescriptor: Int32 = 2, flushMilliseconds: Int = 50) {
        self.flushMilliseconds = max(0, flushMilliseconds)
        lines = PendingLines(fd: fileDescriptor)
    }

    deinit { lines.close() }

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
        // Most targets: no query, short; already what is logged.
        if target.utf8.count <= 256 && !target.utf8.contains(UInt8(ascii: "?")) && target.utf8.allSatisfy({ $0 < 0x80 }) { return target }
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
        line.reserveCapacity(160)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        line.append(contentsOf: #"{"time":"#.utf8)
        Self.appendInteger(Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000), to: &line)
        line.append(contentsOf: #","client":"#.utf8)
        ServerResponse.appendJSONString(entry.client, to: &line)
        line.append(contentsOf: #","method":"#.utf8)
        if let method = entry.method { ServerResponse.appendJSONString(method, to: &line) } else { line.append(contentsOf: "null".utf8) }
        line.append(contentsOf: #","path":"#.utf8)
        if let target = entry.target { ServerResponse.appendJSONString(Self.redacted(target), to: &line) } else { line.append(contentsOf: "null".utf8) }
        line.append(contentsOf: #","status":"#.utf8)
        Self.appendInteger(Int64(entry.status), to: &line)
        line.append(contentsOf: #","bytes":"#.utf8)
        Self.appendInteger(Int64(entry.bytes), to: &line)
        line.append(contentsOf: #","us":"#.utf8)
        Self.appendInteger(entry.microseconds, to: &line)
        line.append(contentsOf: "}\n".utf8)
        if flushMilliseconds == 0 || !startWriter() { return lines.write(line) }
        lines.add(line)
    }

    /// Writes every line waiting now.
    public func flush() { lines.flush() }

    /// Starts the writing thread at the first line; `false` when no thread could be started
    /// (each line is then written at once).
    private func startWriter() -> Bool {
        if started.load(ordering: .acquiring) { return true }
        lines.condition.lock()
        defer { lines.condition.unlock() }
        if started.load(ordering: .acquiring) { return true }
        let shared = lines
        let interval = TimeInterval(flushMilliseconds) / 1000
        let running = startDetachedThread { shared.writeUntilClosed(every: interval) }
        started.store(running, ordering: .releasing)
        return running
    }

    /// Appends the decimal digits of `number`.
    static func appendInteger(_ number: Int64, to line: inout [UInt8]) {
        if number < 0 { line.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: enough for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                count += 1
                buffer[24 - count] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
            } while magnitude > 0
            line.append(contentsOf: buffer[(24 - count)...])
        }
    }
}

/// The access log's lines waiting to be written, and the descriptor they go to.
final class PendingLines: @unchecked Sendable {
    let fd: Int32
    /// Guards `pending` and `closed`; signalled when the first line waits, or at the close.
    let condition = NSCondition()
    /// Held while writing, so batches reach the descriptor in the order they were taken.
    private let writing = NSLock()
    private var pending: [UInt8] = []
    private var closed = false

    init(fd: Int32) { self.fd = fd }

    /// Adds a line; past ``AccessLog/pendingLimit`` the caller writes everything waiting.
    func add(_ line: [UInt8]) {
        condition.lock()
        let first = pending.isEmpty
        pending.append(contentsOf: line)
        let full = pending.count >= AccessLog.pendingLimit
        if first { condition.signal() }
        condition.unlock()
        if full { flush() }
    }

    /// The writing thread: waits for a first line, lets others join it for `interval`
    /// seconds, writes them all; after ``close()``, writes what is left and returns.
    func writeUntilClosed(every interval: TimeInterval) {
        condition.lock()
        while true {
            while pending.isEmpty && !closed { condition.wait() }
            if closed { break }
            let deadline = Date(timeIntervalSinceNow: interval)
            while !closed && condition.wait(until: deadline) {}
            condition.unlock()
            flush()
            condition.lock()
        }
        condition.unlock()
        flush()
    }

    /// Writes every line waiting now.
    func flush() {
        writing.lock()
        defer { writing.unlock() }
        condition.lock()
        let lines = pending
        pending = []
        condition.unlock()
        writeAll(lines)
    }

    /// One line written at once (a log without a writing thread).
    func write(_ line: [UInt8]) {
        writing.lock()
        defer { writing.unlock() }
        writeAll(line)
    }

    /// Ends the writing thread once it has written what waits; lines waiting are written now.
    func close() {
        condition.lock()
        closed = true
        condition.signal()
        condition.unlock()
        flush()
    }

    /// Writes `bytes` whole (retrying an interrupted or short write); a failed write drops them.
    private func writeAll(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { SystemCalls.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
