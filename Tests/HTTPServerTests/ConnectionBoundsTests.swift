import Foundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
import Glibc
#endif

/// The connection bounds as decisions: who is admitted, who is shed, who gets 503.
@Suite("Connection slots and accept back-off")
struct ConnectionSlotsTests {
    static func limits(total: Int, perClient: Int) -> ServerLimits {
        ServerLimits(maxBodyBytes: 1024, maxConnections: total, maxConnectionsPerClient: perClient)
    }

    @Test("a client at its bound sheds its own oldest idle connection, never another client's")
    func perClientSheds() {
        var slots = ConnectionSlots(limits: Self.limits(total: 10, perClient: 2))
        guard case .admit(let first, nil) = slots.admit(peer: "a", fd: 10, now: 1),
            case .admit(let second, nil) = slots.admit(peer: "a", fd: 11, now: 2),
            case .admit(_, nil) = slots.admit(peer: "b", fd: 20, now: 0)
        else { return #expect(Bool(false)) }
        // Both of a's connections are idle: the older one goes.
        let decision1 = slots.admit(peer: "a", fd: 12, now: 3)
        #expect(decision1 == .admit(id: 4, shed: 10))
        #expect(slots.slot(first) == nil)
        // The second is busy now, the third idle: the third goes.
        slots.markBusy(second)
        let decision2 = slots.admit(peer: "a", fd: 13, now: 4)
        #expect(decision2 == .admit(id: 5, shed: 12))
        // Both busy: refused, b untouched (and not shed: it is another client's).
        slots.markBusy(5)
        let decision3 = slots.admit(peer: "a", fd: 14, now: 5)
        #expect(decision3 == .refuse)
        #expect(slots.count(peer: "b") == 1)
        #expect(slots.count == 3)
    }

    @Test("the general pool full: the oldest idle connection of any client is shed, one whose bytes are waiting is not")
    func totalSheds() {
        var slots = ConnectionSlots(limits: Self.limits(total: 3, perClient: 3))
        for (index, peer) in ["a", "b", "c"].enumerated() { _ = slots.admit(peer: peer, fd: Int32(10 + index), now: UInt64(10 - index)) }
        // c is the oldest idle, but bytes are waiting on it: b goes.
        let decision4 = slots.admit(peer: "d", fd: 13, now: 20) { $0.fd != 12 }
        #expect(decision4 == .admit(id: 4, shed: 11))
        for id in [1, 3, 4] { slots.markBusy(id) }
        let decision5 = slots.admit(peer: "e", fd: 14, now: 21)
        #expect(decision5 == .refuse)
        // Idle again later: it is shed before anyone waits.
        slots.markIdle(1, now: 30)
        let decision6 = slots.admit(peer: "e", fd: 14, now: 31)
        #expect(decision6 == .admit(id: 5, shed: 10))
        let decision7 = slots.release(5)
        #expect(decision7)
        let releasedShed = slots.release(1)
        #expect(!releasedShed, "a shed connection's slot is gone already")
    }

    @Test("at the total bound with nothing idle: refused at once; a busy connection is never shed, an idle one of any client is")
    func totalRefuses() {
        var slots = ConnectionSlots(limits: Self.limits(total: 2, perClient: 2))
        _ = slots.admit(peer: "a", fd: 10, now: 1)
        _ = slots.admit(peer: "b", fd: 11, now: 2)
        // Both mid-request.
        slots.markBusy(1)
        slots.markBusy(2)
        let overTotal = slots.admit(peer: "c", fd: 12, now: 3)
        #expect(overTotal == .refuse)
        let overAgain = slots.admit(peer: "a", fd: 13, now: 3)
        #expect(overAgain == .refuse)
        #expect(slots.count == 2 && slots.idleCount == 0)
        // b's request answered, b idle again: c takes its place.
        slots.markIdle(2, now: 4)
        #expect(slots.idleCount == 1)
        let shedding = slots.admit(peer: "c", fd: 14, now: 5)
        #expect(shedding == .admit(id: 3, shed: 11))
        #expect(slots.count(peer: "b") == 0 && slots.count(peer: "c") == 1)
    }

    @Test("out of descriptors, accepting pauses 10 ms, doubling to 1 s, until an accept succeeds; other failures never pause")
    func backoff() {
        var backoff = AcceptBackoff()
        let decision16 = backoff.failed(errno: EAGAIN)
        #expect(decision16 == .drained)
        let decision17 = backoff.failed(errno: ECONNABORTED)
        #expect(decision17 == .again)
        let decision18 = backoff.failed(errno: EINTR)
        #expect(decision18 == .again)
        var pauses: [Int] = []
        for code in [EMFILE, EMFILE, ENFILE, EMFILE, ENOBUFS, EMFILE, EMFILE, EMFILE, EMFILE] {
            if case .pause(let milliseconds) = backoff.failed(errno: code) { pauses.append(milliseconds) }
        }
        #expect(pauses == [10, 20, 40, 80, 160, 320, 640, 1000, 1000])
        backoff.accepted()
        let decision19 = backoff.failed(errno: EMFILE)
        #expect(decision19 == .pause(milliseconds: 10))
        #expect(AcceptBackoff.isOutOfDescriptors(EMFILE) && AcceptBackoff.isOutOfDescriptors(ENFILE))
        #expect(!AcceptBackoff.isOutOfDescriptors(ENOBUFS))
    }
}

/// A plain loopback client whose source address can be chosen (all of 127.0.0.0/8 is this machine).
final class LoopbackClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init?(port: Int, from source: String = "127.0.0.1") {
        // Assigned only once connected: a client that fails is never made, so its `deinit`
        // cannot close the descriptor a second time (by then another thread's file).
        guard let fd = Self.connectedSocket(port: port, from: source) else { return nil }
        self.fd = fd
    }

    private static func connectedSocket(port: Int, from source: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// The status line and fields of the next answer (its body is left), or `nil` when closed or nothing came within `timeout` seconds.
    func head(timeout: Double) -> (status: Int, fields: [String: String])? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) {
                let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                buffer.removeFirst(end + 4)
                let parts = lines[0].split(separator: " ")
                guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
                var fields: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                if let length = fields["content-length"].flatMap(Int.init) {
                    while buffer.count < length, fill(until: deadline) {}
                    buffer.removeFirst(min(length, buffer.count))
                }
                return (status, fields)
            }
            guard fill(until: deadline) else { return nil }
        }
    }

    /// Whether the server closes the connection within `timeout` seconds (bytes before the close are skipped).
    func closed(within timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while fill(until: deadline) {}
        return atEnd
    }

    private var atEnd = false

    private func fill(until deadline: Date) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        guard poll(&fds, 1, Int32(max(0, deadline.timeIntervalSinceNow) * 1000)) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &chunk, chunk.count, 0)
        guard count > 0 else {
            atEnd = true
            return false
        }
        buffer += chunk[0..<count]
        return true
    }
}

/// An ``HTTPServer`` alone on loopback, run on a thread of its own.
final class RunningServer: @unchecked Sendable {
    let server: HTTPServer<Void>
    private let done = DispatchSemaphore(value: 0)
    var port: Int { server.address.port }

    init(limits: ServerLimits, log: AccessLog? = nil, startThread: HTTPServer.ThreadStarter? = nil) throws {
        server = try HTTPServer(
            listen: ListenAddress(host: "127.0.0.1", port: 0), limits: limits, log: log,
            handler: { request, _ in .json(200, Array(#"{"ok":true}"#.utf8)) })
        if let startThread { server.startThread = startThread }
        let thread = Thread { [self] in
            server.run()
            done.signal()
        }
        thread.start()
    }

    /// Stops it; whether ``HTTPServer/run()`` returned within `timeout` seconds.
    func stop(timeout: Double) -> Bool {
        if stopped { return true }
        server.stop()
        stopped = done.wait(timeout: .now() + timeout) == .success
        return stopped
    }
    private var stopped = false

    deinit { _ = stop(timeout: 120) }

    /// Waits (bounded) until `condition` holds.
    static func eventually(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }
}

/// The bounds over real loopback sockets, the server alone.
@Suite("HTTP server: connection bounds, thread failure, stopping")
struct ConnectionBoundsTests {
    static let health = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n"

    @Test("a connection whose thread cannot start gets 503 and its slot back, the socket closed")
    func threadFailure() throws {
        let failing = Locked(true)
        let running = try RunningServer(
            limits: ServerLimits(maxBodyBytes: 1024, maxConnections: 2),
            startThread: { body in failing.value ? false : startDetachedThread(body) })
        for _ in 0..<5 {
            let client = try #require(LoopbackClient(port: running.port))
            client.send(Self.health)
            let head = client.head(timeout: 30)
            #expect(head?.status == 503)
            #expect(head?.fields["retry-after"] != nil)
            #expect(client.closed(within: 30))
        }
        #expect(running.server.activeConnections == 0)
        failing.value = false
        // No slot leaked: both are there to serve.
        let first = try #require(LoopbackClient(port: running.port))
        let second = try #require(LoopbackClient(port: running.port))
        for client in [first, second] {
            client.send(Self.health)
            #expect(client.head(timeout: 30)?.status == 200)
        }
    }

    /// Bounds whose timeouts are two minutes: an answer within seconds can only be the `503` given on accept.
    static func slowLimits(total: Int, perClient: Int) -> ServerLimits {
        ServerLimits(
            maxBodyBytes: 1024, maxConnections: total, maxConnectionsPerClient: perClient, idleTimeoutMilliseconds: 120_000,
            headerTimeoutMilliseconds: 120_000)
    }

    /// Whether `client` is answered `503` with `Retry-After` and then closed, each within `timeout` seconds.
    static func refusedAtOnce(_ client: LoopbackClient, timeout: Double = 5) -> Bool {
        let answer = client.head(timeout: timeout)
        return answer?.status == 503 && answer?.fields["retry-after"] == "5" && client.closed(within: timeout)
    }

    @Test("a client at its bound with every connection mid-request: its next connection gets 503 with Retry-After at once, before it sends anything")
    func perClientBoundSlowClients() throws {
        let running = try RunningServer(limits: Self.slowLimits(total: 20, perClient: 4))
        var slow: [LoopbackClient] = []
        for _ in 0..<4 {
            let client = try #require(LoopbackClient(port: running.port))
            client.send("GET /health HTTP/1.1\r\n")  // a head begun, never finished: not idle
            slow.append(client)
        }
        #expect(RunningServer.eventually { running.server.activeConnections == 4 })
        // Silent: nothing to read, so the answer can only come on accept.
        let fifth = try #require(LoopbackClient(port: running.port))
        #expect(Self.refusedAtOnce(fifth))
        // None of the slow ones was shed for it, and another address is not held back.
        #expect(running.server.activeConnections == 4)
        let other = try #require(LoopbackClient(port: running.port, from: "127.0.0.2"))
        other.send(Self.health)
        #expect(other.head(timeout: 10)?.status == 200)
        // A slow one finishing is served.
        slow[0].send("Host: t\r\n\r\n")
        #expect(slow[0].head(timeout: 10)?.status == 200)
    }

    @Test("the server at its total bound with every connection mid-request: each connection over it gets 503 with Retry-After at once")
    func totalBoundSlowClients() throws {
        let running = try RunningServer(limits: Self.slowLimits(total: 20, perClient: 4))
        var admitted: [LoopbackClient] = []
        var over: [LoopbackClient] = []
        // 32 slow clients, four from each of 127.0.0.2 to 127.0.0.9: the first 20 fill the bound.
        for index in 0..<32 {
            let client = try #require(LoopbackClient(port: running.port, from: "127.0.0.\(2 + index / 4)"))
            client.send("GET /health HTTP/1.1\r\n")
            if index < 20 { admitted.append(client) } else { over.append(client) }
        }
        for client in over { #expect(Self.refusedAtOnce(client)) }
        #expect(running.server.activeConnections == 20)
        // The admitted ones are still being served: one finishing gets its answer.
        admitted[19].send("Host: t\r\n\r\n")
        #expect(admitted[19].head(timeout: 10)?.status == 200)
    }

    @Test("a client at its bound with its connections idle between requests: a new one sheds the oldest idle and is served")
    func perClientBoundShedsIdle() throws {
        let running = try RunningServer(limits: Self.slowLimits(total: 20, perClient: 4))
        var kept: [LoopbackClient] = []
        for count in 1...4 {
            let client = try #require(LoopbackClient(port: running.port))
            client.send(Self.health)
            #expect(client.head(timeout: 10)?.status == 200)
            kept.append(client)
            // Answered and waiting for its next request (keep-alive), idle before the next one connects.
            #expect(RunningServer.eventually { running.server.idleConnections == count })
        }
        let fifth = try #require(LoopbackClient(port: running.port))
        fifth.send(Self.health)
        #expect(fifth.head(timeout: 10)?.status == 200)
        // The oldest idle one made room: the server closed it.
        #expect(kept[0].closed(within: 10))
        #expect(running.server.activeConnections == 4)
    }

    @Test("stop: idle connections close at once, a request still arriving gets the grace then 503, run() returns")
    func stopGrace() throws {
        let limits = ServerLimits(
            maxBodyBytes: 1024, idleTimeoutMilliseconds: 120_000, bodyTimeoutMilliseconds: 120_000, shutdownGraceMilliseconds: 500)
        let running = try RunningServer(limits: limits)
        let idle = try #require(LoopbackClient(port: running.port))
        idle.send(Self.health)
        #expect(idle.head(timeout: 10)?.status == 200)
        let slow = try #require(LoopbackClient(port: running.port))
        slow.send("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
        #expect(RunningServer.eventually { running.server.activeConnections == 2 })
        let started = Date()
        // The idle and body timeouts are two minutes: only the grace can end this within the bound.
        #expect(running.stop(timeout: 30))
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(idle.closed(within: 10))
        #expect(slow.head(timeout: 10)?.status == 503)
        #expect(slow.closed(within: 10))
    }
}

/// A value behind a lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }
}
