import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import HTTPServer
import Testing
import TestPKI
#if canImport(Glibc)
import Glibc
#endif

/// A raw HTTP/1.1 client over a loopback socket, for sending exactly the bytes a test means
/// (hostile ones included) and reading the answers.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    struct Response {
        var status: Int
        var fields: [(String, String)]
        var body: [UInt8]
        func field(_ name: String) -> String? { fields.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: JSONValue? { try? JSONParser().parse(body) }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Connects to 127.0.0.1:`port` (the listen backlog accepts at once, whether or not the server has room),
    /// from `source` when given (any address of 127.0.0.0/8: another client to the server).
    init(port: Int, from source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw Failure(description: "cannot bind to \(source): errno \(errno)")
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
            close(fd)
            throw Failure(description: "cannot connect to 127.0.0.1:\(port): errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends bytes; `false` when the server has closed the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

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
    func response(timeout: Double = 30) -> Response? {
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
        let length = fields.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
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
    func closedByServer(within timeout: Double) -> Bool {
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
    static func request(_ method: String, _ target: String, body: [UInt8]? = nil, headers: [String] = []) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: test\r\n"
        for header in headers { text += header + "\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + (body ?? [])
    }

    /// One request on a fresh connection.
    static func exchange(port: Int, _ method: String, _ target: String, body: String? = nil, headers: [String] = []) throws -> Response {
        let client = try RawClient(port: port)
        client.send(request(method, target, body: body.map { Array($0.utf8) }, headers: headers))
        guard let response = client.response() else { throw Failure(description: "no answer to \(method) \(target)") }
        return response
    }
}

/// A `Server` on a real engine, listening on 127.0.0.1 with an ephemeral port, run on a thread of its own.
final class TestServer: @unchecked Sendable {
    let workspace: Reliability.Workspace
    let engine: Engine
    let server: Server
    let logURL: URL
    private let logFD: Int32
    private let done = DispatchSemaphore(value: 0)
    var port: Int { server.address.port }
    private(set) var runError: EngineError?

    init(
        name: String = "serve", token: String? = nil, maxInputBytes: Int? = nil, database: String = "serve.sqlite",
        workspace: Reliability.Workspace? = nil, configure: (inout Server.Options) -> Void = { _ in }
    ) throws {
        self.workspace = try workspace ?? Reliability.Workspace(name: name, maxInputBytes: maxInputBytes)
        engine = try self.workspace.engine(database)
        var options = Server.Options(maxBodyBytes: engine.configuration.maxInputBytes)
        configure(&options)
        logURL = self.workspace.url("access-\(UUID().uuidString.prefix(6)).log")
        logFD = open(logURL.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        server = try Server(
            engine: engine, settings: ServeSettings(listen: ListenAddress(host: "127.0.0.1", port: 0), token: token), options: options,
            log: AccessLog(fileDescriptor: logFD))
        let thread = Thread { [self] in
            do throws(EngineError) { try server.run() } catch { runError = error }
            done.signal()
        }
        thread.start()
    }

    /// Stops the server and waits (bounded) for it to finish; `false` if it did not.
    @discardableResult
    func stop(timeout: Double = 60) -> Bool {
        if stopped { return true }
        server.stop()
        stopped = done.wait(timeout: .now() + timeout) == .success
        return stopped
    }
    private var stopped = false

    deinit {
        stop()
        close(logFD)
    }

    func exchange(_ method: String, _ target: String, body: String? = nil, headers: [String] = []) throws -> RawClient.Response {
        try RawClient.exchange(port: port, method, target, body: body, headers: headers)
    }

    /// The access log's lines so far.
    var logLines: [JSONValue] {
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONParser().parse(Array($0.utf8)) }
    }

    /// Waits (bounded) until `condition` holds, checking every few milliseconds.
    static func eventually(timeout: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(5_000)
        }
        return try condition()
    }
}

/// Signed App Store bodies for the serve tests.
enum ServeSamples {
    static let pki = Reliability.pki
    /// Another PKI: what it signs fails verification (`INVALID_CHAIN`).
    static let forger = TestPKI()

    /// Apple's notification body: a SUBSCRIBED notification for customer `n`.
    static func notification(_ n: Int, uuid: String? = nil, signer: TestPKI = pki) -> String {
        let transaction = TestPayloads.transaction(
            transactionId: "\(3_000_000_000_000_000 + n)", appTransactionId: "\(705_000_000_000_000_000 + n)",
            appAccountToken: "0d0a0000-0000-4000-8000-\(String(format: "%012d", n))")
        let payload = TestPayloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid ?? "5e000000-0000-4000-8000-\(String(format: "%012d", n))",
            signedTransactionInfo: signer.sign(transaction))
        return #"{"signedPayload":""# + signer.sign(payload) + #""}"#
    }

    static func customer(_ n: Int) -> String { "\(705_000_000_000_000_000 + n)" }
    static func originalTransactionId(_ n: Int) -> String { "\(3_000_000_000_000_000 + n)" }
    static func accountToken(_ n: Int) -> String { "0d0a0000-0000-4000-8000-\(String(format: "%012d", n))" }
}

extension JSONValue {
    /// The element at `index` when this is an array that long.
    func element(_ index: Int) -> JSONValue? {
        if case .array(let elements) = self, index < elements.count { return elements[index] }
        return nil
    }
}

/// A value behind a lock, shareable by the threads of a test.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
