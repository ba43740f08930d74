import Foundation
import Testing

@testable import HTTPServer

#if canImport(Glibc)
import Glibc
#endif

/// The connection bounds as decisions: who is admitted, who is shed, who gets 503.
@Suite("Connection slots and accept back-off")
struct ConnectionSlotsTests {
    static func limits(total: Int, perClient: Int, reserved: [String: Int] = [:]) -> ServerLimits {
        ServerLimits(maxBodyBytes: 1024, maxConnections: total, maxConnectionsPerClient: perClient, reservedConnections: reserved)
    }

    @Test("a client at its bound sheds its own oldest idle connection, never another client's")
    func perClientSheds() {
        var slots = ConnectionSlots(limits: Self.limits(total: 10, perClient: 2))
        guard case .admit(let first, .general, nil) = slots.admit(peer: "a", fd: 10, now: 1),
            case .admit(let second, .general, nil) = slots.admit(peer: "a", fd: 11, now: 2),
            case .admit(_, .general, nil) = slots.admit(peer: "b", fd: 20, now: 0)
        else { return #expect(Bool(false)) }
        // Both of a's connections are idle: the older one goes.
        let decision1 = slots.admit(peer: "a", fd: 12, now: 3)
        #expect(decision1 == .admit(id: 4, tier: .general, shed: 10))
        #expect(slots.slot(first) == nil)
        // The second is busy now, the third idle: the third goes.
        slots.markBusy(second)
        let decision2 = slots.admit(peer: "a", fd: 13, now: 4)
        #expect(decision2 == .admit(id: 5, tier: .general, shed: 12))
        // Both busy: refused (no reserve), b untouched.
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
        #expect(decision4 == .admit(id: 4, tier: .general, shed: 11))
        for id in [1, 3, 4] { slots.markBusy(id) }
        let decision5 = slots.admit(peer: "e", fd: 14, now: 21)
        #expect(decision5 == .refuse)
        // Idle again later: it is shed before anyone waits.
        slots.markIdle(1, now: 30)
        let decision6 = slots.admit(peer: "e", fd: 14, now: 31)
        #expect(decision6 == .admit(id: 5, tier: .general, shed: 10))
        let decision7 = slots.release(5)
        #expect(decision7)
        let releasedShed = slots.release(1)
        #expect(!releasedShed, "a shed connection's slot is gone already")
    }

    @Test("over a bound with nothing to shed: a pending slot of the reserve; the head places it or refuses it")
    func reserve() {
        var slots = ConnectionSlots(limits: Self.limits(total: 2, perClient: 2, reserved: ["hook": 1, "auth": 1]))
        _ = slots.admit(peer: "a", fd: 10, now: 1)
        _ = slots.admit(peer: "b", fd: 11, now: 1)
        slots.markBusy(1)
        slots.markBusy(2)
        guard case .admit(let hook, .pending, nil) = slots.admit(peer: "x", fd: 20, now: 2),
            case .admit(let auth, .pending, nil) = slots.admit(peer: "y", fd: 21, now: 2)
        else { return #expect(Bool(false)) }
        slots.markBusy(hook)
        slots.markBusy(auth)
        // The reserve holds two: a third over the bounds is refused.
        let decision8 = slots.admit(peer: "z", fd: 22, now: 3)
        #expect(decision8 == .refuse)
        let decision9 = slots.place(hook, pool: "hook")
        #expect(decision9 == .reserved("hook"))
        let decision10 = slots.place(auth, pool: "auth")
        #expect(decision10 == .reserved("auth"))
        // The pools are full; a pending one that names none, or a full one, is refused.
        slots.release(auth)
        guard case .admit(let other, .pending, nil) = slots.admit(peer: "z", fd: 23, now: 4) else { return #expect(Bool(false)) }
        let decision11 = slots.place(other, pool: "hook")
        #expect(decision11 == .refused)
        let decision12 = slots.place(other, pool: nil)
        #expect(decision12 == .refused)
        // Room in the general pool: a pending one goes there, whatever its head.
        slots.release(other)
        guard case .admit(let late, .pending, nil) = slots.admit(peer: "z", fd: 24, now: 5) else { return #expect(Bool(false)) }
        slots.release(1)
        let decision13 = slots.place(late, pool: nil)
        #expect(decision13 == .general)
    }

    @Test("one client over its bound holds at most half the reserve; its idle pending ones are shed for it")
    func reserveShare() {
        var slots = ConnectionSlots(limits: Self.limits(total: 10, perClient: 1, reserved: ["hook": 2, "auth": 2]))
        _ = slots.admit(peer: "a", fd: 10, now: 0)
        slots.markBusy(1)
        var pending: [Int] = []
        for index in 0..<2 {
            guard case .admit(let id, .pending, nil) = slots.admit(peer: "a", fd: Int32(11 + index), now: UInt64(1 + index)) else {
                return #expect(Bool(false))
            }
            pending.append(id)
        }
        // At its share (2 of 4): its oldest idle pending one goes.
        let decision14 = slots.admit(peer: "a", fd: 13, now: 5)
        #expect(decision14 == .admit(id: 4, tier: .pending, shed: 11))
        for id in [pending[1], 4] { slots.markBusy(id) }
        let decision15 = slots.admit(peer: "a", fd: 14, now: 6)
        #expect(decision15 == .refuse)
        // Another client still has the rest of the reserve.
        _ = slots.admit(peer: "b", fd: 30, now: 0)
        slots.markBusy(5)
        if case .admit(_, .pending, nil) = slots.admit(peer: "b", fd: 31, now: 7) {} else { Issue.record("b had no pending slot") }
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
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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

    init(limits: ServerLimits, startThread: HTTPServer.ThreadStarter? = nil, reservation: @escaping HTTPServer.Reservation = { _, _ in nil }) throws {
        server = try HTTPServer(
            listen: ListenAddress(host: "127.0.0.1", port: 0), limits: limits, log: nil, reservation: reservation,
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
@Suite("HTTP server: connection bounds, reserve, thread failure, stopping")
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

    @Test("past every bound with nothing idle: 503 with Retry-After at once; the reserve serves the head it names, one request")
    func boundsAndReserve() throws {
        let limits = ServerLimits(maxBodyBytes: 1024, maxConnections: 4, maxConnectionsPerClient: 2, reservedConnections: ["hook": 1, "auth": 1])
        let running = try RunningServer(
            limits: limits,
            reservation: { head, _ in
                if head.path == "/hook" { return "hook" }
                return head.field("authorization") != nil ? "auth" : nil
            })
        // Four busy connections (a head begun) from two addresses fill the general pool.
        var busy: [LoopbackClient] = []
        for source in ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"] {
            let client = try #require(LoopbackClient(port: running.port, from: source))
            client.send("GET /health HTTP/1.1\r\n")
            busy.append(client)
        }
        #expect(RunningServer.eventually { running.server.activeConnections == 4 })
        // A fifth client address: a pending slot, and a head that names no pool gets 503 at once.
        let plain = try #require(LoopbackClient(port: running.port, from: "127.0.0.4"))
        plain.send(Self.health)
        let refused = plain.head(timeout: 10)
        #expect(refused?.status == 503)
        #expect(refused?.fields["retry-after"] == "5")
        #expect(plain.closed(within: 10))
        // The webhook and a token holder are served, one request each.
        let hook = try #require(LoopbackClient(port: running.port, from: "127.0.0.4"))
        hook.send("POST /hook HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}")
        let hooked = hook.head(timeout: 10)
        #expect(hooked?.status == 200)
        #expect(hooked?.fields["connection"] == "close")
        let auth = try #require(LoopbackClient(port: running.port, from: "127.0.0.2"))
        auth.send("GET /health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer x\r\n\r\n")
        #expect(auth.head(timeout: 10)?.status == 200)
        #expect(hook.closed(within: 10) && auth.closed(within: 10))
        #expect(RunningServer.eventually { running.server.activeConnections == 4 })
        // With both reserved slots held by silent heads begun, the next is refused before it sends anything.
        let holdHook = try #require(LoopbackClient(port: running.port, from: "127.0.0.5"))
        holdHook.send("POST /hook HTTP/1.1\r\n")
        let holdAuth = try #require(LoopbackClient(port: running.port, from: "127.0.0.6"))
        holdAuth.send("GET /health HTTP/1.1\r\n")
        #expect(RunningServer.eventually { running.server.activeConnections == 6 })
        let over = try #require(LoopbackClient(port: running.port, from: "127.0.0.7"))
        let answer = over.head(timeout: 10)
        #expect(answer?.status == 503)
        #expect(answer?.fields["retry-after"] == "5")
        // A busy one finishing makes room in the general pool again.
        busy[0].send("Host: t\r\n\r\n")
        #expect(busy[0].head(timeout: 10)?.status == 200)
        busy.removeFirst()
        #expect(RunningServer.eventually { running.server.activeConnections == 5 })
        let later = try #require(LoopbackClient(port: running.port, from: "127.0.0.8"))
        later.send(Self.health)
        #expect(later.head(timeout: 10)?.status == 200)
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
