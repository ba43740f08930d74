import Foundation
import JSONAndBase64
import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A raw HTTP/1.1 client over a loopback socket, for sending exactly the bytes a test means
/// (hostile ones included) and reading the answers.
package final class RawClient {
    package let fd: Int32
    private var buffer: [UInt8] = []

    package struct Response {
        package var status: Int
        package var fields: [(String, String)]
        package var body: [UInt8]
        package func field(_ name: String) -> String? { fields.first { $0.0.lowercased() == name.lowercased() }?.1 }
        package var text: String { String(decoding: body, as: UTF8.self) }
        package var json: JSONValue? { try? JSONParser().parse(body) }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    /// Connects to 127.0.0.1:`port` (the listen backlog accepts at once, whether or not the server has room).
    /// From `source` when given (any address of 127.0.0.0/8: another client to the server).
    package init(port: Int, from source: String? = nil) throws {
        // The socket is this client's only once it is connected: a client that fails is never
        // made, so its `deinit` cannot close the descriptor a second time (by then the number
        // may be another thread's file, a database's among them).
        fd = try Self.connectedSocket(port: port, from: source)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A socket connected to 127.0.0.1:`port` (from `source` when given); closed, once, when that fails.
    private static func connectedSocket(port: Int, from source: String?) throws -> Int32 {
        let fd = SystemCalls.socket(family: AF_INET)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                close(fd)
                throw Failure(description: "cannot bind to \(source): errno \(code)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "cannot connect to 127.0.0.1:\(port): errno \(code)")
        }
        return fd
    }

    deinit { close(fd) }

    /// Sends bytes; `false` when the server has closed the connection.
    @discardableResult
    package func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { SystemCalls.send(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    @discardableResult
    package func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads more bytes, waiting at most `timeout` seconds; `false` at end of stream, error or timeout.
    private func fill(timeout: Double) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        guard poll(&fds, 1, Int32(timeout * 1000)) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffer += chunk[0..<count]
        return true
    }

    /// The next response (interim 1xx ones included), or `nil` when the connection closed or nothing came in `timeout` seconds.
    /// - Parameter bodyless: the answer to a HEAD request: its `Content-Length` names a body that is not sent.
    package func response(timeout: Double = 30, bodyless: Bool = false) -> Response? {
        let deadline = Date().addingTimeInterval(timeout)
        func remaining() -> Double { max(0.001, deadline.timeIntervalSinceNow) }
        var headEnd: Int? = nil
        while headEnd == nil {
            if let range = findCRLFCRLF() { headEnd = range } else if Date() >= deadline || !fill(timeout: remaining()) { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        let fields = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        buffer.removeFirst(headEnd! + 4)
        let length = bodyless ? 0 : fields.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        while buffer.count < length {
            if Date() >= deadline || !fill(timeout: remaining()) { return nil }
        }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return Response(status: status, fields: fields, body: body)
    }

    private func findCRLFCRLF() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Whether the server closes the connection within `timeout` seconds (bytes it sends first are skipped).
    package func closedByServer(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { return false }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return true }
        }
        return false
    }

    /// A whole request, `Host` and `Content-Length` added.
    package static func request(_ method: String, _ target: String, body: [UInt8]? = nil, headers: [String] = []) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
        for header in headers { text += header + "\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + (body ?? [])
    }

    /// One request on a fresh connection.
    package static func exchange(port: Int, _ method: String, _ target: String, body: String? = nil, headers: [String] = []) throws -> Response {
        let client = try RawClient(port: port)
        client.send(request(method, target, body: body.map { Array($0.utf8) }, headers: headers))
        guard let response = client.response() else { throw Failure(description: "no answer to \(method) \(target)") }
        return response
    }
}
