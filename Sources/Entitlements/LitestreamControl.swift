import EntitlementCore
import Foundation
internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Litestream's control socket: HTTP/1.1 over a Unix socket. `POST /sync` with
/// `{"path": DB, "wait": true, "timeout": SECONDS}` makes Litestream read the
/// write-ahead log now and answers once the replica holds it:
/// `{"status": "synced" | "no_change", "txid": T, "replicated_txid": R}`. The
/// commit is on the replica when the answer is `200` and `R >= T`.
struct LitestreamControl: Sendable {
    /// The control socket's path.
    let socketPath: String
    /// The database as Litestream names it: absolute (litestream.yml's `path`, made absolute).
    let databasePath: String

    /// Why one request did not confirm.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        /// The deadline passed before Litestream answered: says less than an answer it gave.
        var deadlinePassed = false

        /// What to report of two failures, `self` the later: an answer Litestream gave is kept
        /// over a deadline that later attempts ran into; otherwise the later one.
        func reported(over earlier: Failure?) -> Failure {
            guard deadlinePassed, let earlier, !earlier.deadlinePassed else { return self }
            return earlier
        }
    }

    /// Asks Litestream to sync the database to its replica and wait for it.
    /// - Returns: the replica's transaction id, once it holds everything committed before the call.
    /// - Throws: ``Failure`` when the socket cannot be reached, the deadline passes, or Litestream does not confirm.
    func syncAndWait(deadline: ContinuousClock.Instant) throws(Failure) -> UInt64 {
        let remaining = ContinuousClock.now.duration(to: deadline)
        let seconds = max(1, Int((Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18).rounded(.up)))
        let body = JSONWriter.string(["path": .string(databasePath), "wait": .bool(true), "timeout": .int(Int64(seconds))])
        let request =
            "POST /sync HTTP/1.1\r\nHost: litestream\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            + body
        let response = try exchange(Array(request.utf8), deadline: deadline)
        let (status, json) = try Self.parse(response)
        guard status == 200 else {
            var reason = "Litestream answered \(status)"
            if case .object(let object)? = json, case .string(let message)? = object["error"] { reason += ": \(message)" }
            throw Failure(description: reason)
        }
        guard case .object(let object)? = json, case .int(let txid)? = object["txid"], case .int(let replicated)? = object["replicated_txid"] else {
            throw Failure(description: "Litestream's answer to /sync has no txid and replicated_txid")
        }
        guard replicated >= txid else {
            throw Failure(description: "the replica holds transaction \(replicated), behind the database's \(txid)")
        }
        return UInt64(replicated)
    }

    /// Sends `request` and reads the whole answer (the server closes the connection), by `deadline`.
    private func exchange(_ request: [UInt8], deadline: ContinuousClock.Instant) throws(Failure) -> [UInt8] {
        let fd = SystemCalls.socket(family: AF_UNIX)
        guard fd >= 0 else { throw Failure(description: "cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure(description: "the socket path \(socketPath) is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in pathBytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected != 0 {
            guard errno == EINPROGRESS || errno == EAGAIN else {
                throw Failure(description: "cannot reach Litestream's control socket \(socketPath): \(String(cString: strerror(errno)))")
            }
            try wait(fd, for: Int16(POLLOUT), deadline: deadline)
            var problem: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &problem, &length)
            if problem != 0 {
                throw Failure(description: "cannot reach Litestream's control socket \(socketPath): \(String(cString: strerror(problem)))")
            }
        }
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { SystemCalls.send(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                try wait(fd, for: Int16(POLLOUT), deadline: deadline)
            } else {
                throw Failure(description: "the control socket closed while sending: \(String(cString: strerror(errno)))")
            }
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                response.append(contentsOf: chunk[0..<count])
                guard response.count <= 1 << 20 else { throw Failure(description: "Litestream's answer is larger than 1 MiB") }
            } else if count == 0 {
                return response
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                try wait(fd, for: Int16(POLLIN), deadline: deadline)
            } else {
                throw Failure(description: "the control socket failed while reading: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Waits until `fd` is ready for `events`, or throws once `deadline` has passed.
    private func wait(_ fd: Int32, for events: Int16, deadline: ContinuousClock.Instant) throws(Failure) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            guard milliseconds > 0 else { throw Failure(description: "Litestream did not answer in time", deadlinePassed: true) }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(clamping: milliseconds))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw Failure(description: "poll failed: \(String(cString: strerror(errno)))") }
        }
    }

    /// The status code and the JSON body of an HTTP/1.1 answer (its body whole, or in chunks).
    static func parse(_ response: [UInt8]) throws(Failure) -> (Int, JSONValue?) {
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "Litestream's answer ended before its header did")
        }
        let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "Litestream's answer is not HTTP: \(statusLine.prefix(80))")
        }
        // A JSON object, whether the body came whole or in chunks (chunk sizes lie outside its braces).
        let body = response[end.upperBound...]
        guard let open = body.firstIndex(of: UInt8(ascii: "{")), let close = body.lastIndex(of: UInt8(ascii: "}")), open < close else {
            return (status, nil)
        }
        return (status, try? JSONParser().parse(Array(body[open...close])))
    }
}
