import Foundation
import Synchronization
internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP/1.1 server on POSIX sockets: one thread per connection (within
/// the bounds of ``ServerLimits``: in total and per client address), the framing
/// done by ``RequestParser``, the answers by the handler. A connection over a
/// bound sheds an idle one or is answered `503` with `Retry-After` as soon as it
/// is accepted, before any of its request is read; it never waits in the listen
/// backlog.
///
/// Call ``run()`` on a thread of its own; ``stop()`` (or SIGTERM, after
/// ``stopOnSignals(_:)``) closes the listening socket, closes idle connections,
/// gives a request being received ``ServerLimits/shutdownGraceMilliseconds``
/// to arrive whole, answers the complete ones, and makes ``run()`` return once
/// all are closed.
///
/// What the preflight learns from a request's head (a parsed route, say) is its
/// `Context`, handed to the handler with the complete request, so nothing is worked
/// out twice.
public final class HTTPServer<Context: Sendable>: @unchecked Sendable {
    /// Checks a request's head before its body is read: an answer here is sent
    /// at once (the body, if any, stays unread and the connection is closed).
    public typealias Preflight = @Sendable (RequestHead, ClientInfo) -> HeadDecision<Context>
    /// Answers a complete request, with what its preflight learned.
    public typealias Handler = @Sendable (ServerRequest, Context, ClientInfo) -> ServerResponse
    /// Header fields added to the answers the server makes on its own, to a request it
    /// could not take (malformed, too large, too slow, or cut off by a stop).
    public typealias ErrorFields = @Sendable () -> [HTTPField]
    /// Starts a thread running the closure; `false` when the system could not.
    typealias ThreadStarter = @Sendable (@escaping @Sendable () -> Void) -> Bool

    /// The address bound (with the port the system chose when asked for port 0).
    public let address: ListenAddress
    public let limits: ServerLimits
    private let listenFD: Int32
    /// Written once to stop: every poller watching the read end wakes, forever after.
    private let stopPipe: (read: Int32, write: Int32)
    /// Written when a connection ends, so the accept loop re-counts.
    private let wakePipe: (read: Int32, write: Int32)
    private let log: AccessLog?
    private let preflight: Preflight
    private let handler: Handler
    private let errorFields: ErrorFields?
    /// Called once the server has begun to stop, before it finishes what it accepted.
    private let onStopping: (@Sendable () -> Void)?
    private let lock = NSLock()
    private var slots: ConnectionSlots
    /// Set once when the server stops accepting; read by every connection at each request, without a lock.
    private let stopping = Atomic<Bool>(false)
    /// How connection threads are started (a test makes it fail).
    var startThread: ThreadStarter = startDetachedThread

    /// Binds and listens.
    /// - Throws: ``ServerError`` when the address cannot be bound (in use, not local, not permitted).
    /// - Parameter errorFields: fields for the answers the server makes on its own (``ErrorFields``).
    public init(
        listen: ListenAddress, limits: ServerLimits, log: AccessLog?, preflight: @escaping Preflight, handler: @escaping Handler,
        errorFields: ErrorFields? = nil, onStopping: (@Sendable () -> Void)? = nil
    ) throws(ServerError) {
        signal(SIGPIPE, SIG_IGN)
        self.limits = limits
        self.log = log
        self.preflight = preflight
        self.handler = handler
        self.errorFields = errorFields
        self.onStopping = onStopping
        slots = ConnectionSlots(limits: limits)
        let (fd, bound) = try Self.bind(listen, backlog: limits.backlog)
        listenFD = fd
        address = bound
        stopPipe = Self.makePipe()
        wakePipe = Self.makePipe()
    }

    deinit {
        for fd in [stopPipe.read, stopPipe.write, wakePipe.read, wakePipe.write] { close(fd) }
    }

    private static func makePipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        _ = pipe(&fds)
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        return (fds[0], fds[1])
    }

    private static func bind(_ listen: ListenAddress, backlog: Int32) throws(ServerError) -> (Int32, ListenAddress) {
        let v6 = listen.isIPv6
        let fd = SystemCalls.socket(family: v6 ? AF_INET6 : AF_INET)
        guard fd >= 0 else { throw ServerError(code: .listenFailed, message: "cannot create a socket: \(errorText(errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var result: Int32
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(listen.port).bigEndian)
            inet_pton(AF_INET6, listen.host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SystemCalls.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(listen.port).bigEndian)
            inet_pton(AF_INET, listen.host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SystemCalls.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if result != 0 {
            let reason = errorText(errno)
            close(fd)
            throw ServerError(code: .listenFailed, message: "cannot listen on \(listen): \(reason)")
        }
        guard SystemCalls.listen(fd, backlog) == 0 else {
            let reason = errorText(errno)
            close(fd)
            throw ServerError(code: .listenFailed, message: "cannot listen on \(listen): \(reason)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Self.numeric(storage).port
        return (fd, ListenAddress(host: listen.host, port: port))
    }

    /// The numeric host and port of a socket address.
    static func numeric(_ storage: sockaddr_storage) -> (host: String, port: Int) {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var address = pointer.pointee.sin6_addr
                    inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                    return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), Int(UInt16(bigEndian: pointer.pointee.sin6_port)))
                }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin_addr
                inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
                return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), Int(UInt16(bigEndian: pointer.pointee.sin_port)))
            }
        }
    }

    // MARK: Stopping

    /// Begins the shutdown: stop accepting, finish what was accepted. Safe from any thread.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// Makes SIGTERM and SIGINT call ``stop()`` (one server per process).
    public func stopOnSignals(_ signals: [Int32] = [SIGTERM, SIGINT]) {
        signalStopDescriptor = stopPipe.write
        // A parent may have started this process with the signals blocked (the mask is inherited).
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals {
            signal(number, stopSignalHandler)
            sigaddset(&set, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Connections open now.
    public var activeConnections: Int {
        lock.lock()
        defer { lock.unlock() }
        return slots.count
    }

    /// Connections open now with no request under way (those a new connection over a bound may shed).
    var idleConnections: Int {
        lock.lock()
        defer { lock.unlock() }
        return slots.idleCount
    }

    /// Whether ``stop()`` was called: the server accepts no more connections and finishes
    /// the requests it has.
    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    // MARK: Accepting

    /// Accepts and serves connections until ``stop()``; returns when every connection is closed.
    public func run() {
        var backoff = AcceptBackoff()
        var pausedUntil: UInt64 = 0
        while true {
            let now = Connection.now()
            let paused = now < pausedUntil
            var fds = [
                pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
            ]
            if !paused { fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), paused ? Int32((pausedUntil - now) / 1000 + 1) : -1)
            if ready < 0 { continue }
            if fds[0].revents != 0 { break }
            if fds[1].revents != 0 { drain(wakePipe.read) }
            if !paused && fds[2].revents != 0, let pause = acceptPending(&backoff) {
                pausedUntil = Connection.now() + UInt64(pause) * 1000
            }
        }
        stopping.store(true, ordering: .releasing)
        close(listenFD)
        // The handlers under way may be waiting on something the owner can cut short.
        onStopping?()
        // Finish what was accepted.
        while true {
            lock.lock()
            let remaining = slots.count
            lock.unlock()
            if remaining == 0 { break }
            var fds = [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, 1000)
            drain(wakePipe.read)
        }
        // Every answer is sent: its line is written before the server is said to have stopped.
        log?.flush()
    }

    private func drain(_ fd: Int32) {
        var bytes = [UInt8](repeating: 0, count: 256)
        while read(fd, &bytes, bytes.count) > 0 {}
    }

    /// Accepts every connection waiting; returns a pause (milliseconds) when accepting must stop a while.
    private func acceptPending(_ backoff: inout AcceptBackoff) -> Int? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listenFD, $0, &length)
                }
            }
            if fd < 0 {
                let code = errno
                switch backoff.failed(errno: code) {
                case .drained: return nil
                case .again: continue
                case .pause(let milliseconds):
                    // Out of descriptors: an idle connection gives one back.
                    if AcceptBackoff.isOutOfDescriptors(code) {
                        lock.lock()
                        if let victim = slots.shedOldestIdle(stillIdle: { !Connection.hasBytesWaiting($0.fd) }) {
                            shutdown(victim.fd, Int32(SHUT_RDWR))
                        }
                        lock.unlock()
                    }
                    return milliseconds
                }
            }
            backoff.accepted()
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let client = ClientInfo(peer: Self.numeric(storage).host)
            lock.lock()
            let admission = slots.admit(peer: client.peer, fd: fd, now: Connection.now()) { !Connection.hasBytesWaiting($0.fd) }
            if case .admit(_, let victim?) = admission {
                // The idle connection's thread wakes on the shutdown and closes it.
                shutdown(victim, Int32(SHUT_RDWR))
            }
            lock.unlock()
            guard case .admit(let id, _) = admission else {
                // Over a bound with nothing idle to shed: answered now, its request unread.
                refuse(fd, client: client)
                continue
            }
            let started = startThread { [self] in
                var connection = Connection(fd: fd, id: id, client: client, server: self)
                connection.serve()
                finish(id: id, fd: fd)
            }
            if !started {
                // No thread, no connection: the slot is freed and the client told at once.
                lock.lock()
                slots.release(id)
                lock.unlock()
                refuse(fd, client: client)
            }
        }
    }

    /// `response` with the ``ErrorFields`` the server was given.
    func addErrorFields(_ response: inout ServerResponse) {
        if let errorFields { response.fields.append(contentsOf: errorFields()) }
    }

    /// A connection's end: its slot freed (unless it was shed) before its descriptor is closed.
    private func finish(id: Int, fd: Int32) {
        lock.lock()
        slots.release(id)
        lock.unlock()
        close(fd)
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    /// `503` with `Retry-After` to a connection over the bounds, written without waiting, and closed.
    private func refuse(_ fd: Int32, client: ClientInfo) {
        var response = ServerResponse.error(503, code: "SERVER_BUSY", message: "too many connections; retry later", closesConnection: true)
        response.fields.append(HTTPField(name: "Retry-After", value: String(limits.retryAfterSeconds)))
        let bytes = response.serialized(close: true)
        _ = bytes.withUnsafeBytes { SystemCalls.send(fd, $0.baseAddress, $0.count) }
        shutdown(fd, Int32(SHUT_WR))
        // What the client sent already is read, so that closing does not reset the connection under the answer.
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<4 where recv(fd, &chunk, chunk.count, 0) > 0 {}
        close(fd)
        log?.write(AccessLog.Entry(client: client.peer, method: nil, target: nil, status: 503, bytes: response.body.count, microseconds: 0))
    }

    // MARK: Slots, for connections

    private func markIdle(_ id: Int) {
        lock.lock()
        slots.markIdle(id, now: Connection.now())
        lock.unlock()
    }

    private func markBusy(_ id: Int) {
        lock.lock()
        slots.markBusy(id)
        lock.unlock()
    }

    // MARK: One connection

    private struct Connection {
        let fd: Int32
        let id: Int
        let client: ClientInfo
        let server: HTTPServer<Context>
        var parser: RequestParser
        var requestStarted: UInt64 = 0
        var bodyStarted: UInt64 = 0
        /// The last byte received or answer sent: the idle timeout counts from it.
        var lastActivity: UInt64
        var method: String?
        var target: String?
        /// The request being answered is a HEAD: routed as a GET, answered without the body.
        var answeringHead = false
        var stopSeen = false
        /// After a stop: a request still arriving is cut, and an answer abandoned, at this time.
        var stopDeadline: UInt64 = 0
        /// Whether the server's slots know it as idle.
        var idle = true
        /// What the preflight learned from the head of the request being received.
        var context: Context?

        init(fd: Int32, id: Int, client: ClientInfo, server: HTTPServer<Context>) {
            self.fd = fd
            self.id = id
            self.client = client
            self.server = server
            self.parser = RequestParser(limits: server.limits.parser)
            self.lastActivity = Self.now()
        }

        /// Milliseconds from now until `deadline` (microseconds), negative when past.
        static func milliseconds(until deadline: UInt64) -> Int {
            Int((Int64(deadline) - Int64(now())) / 1000)
        }

        mutating func noteStop() {
            guard !stopSeen else { return }
            stopSeen = true
            stopDeadline = Self.now() + UInt64(max(0, server.limits.shutdownGraceMilliseconds)) * 1000
        }

        static func now() -> UInt64 {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec / 1000)
        }

        mutating func serve() {
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let limits = server.limits
            while true {
                switch parser.next() {
                case .needMore:
                    if !stopSeen && server.isStopping { noteStop() }
                    var timeout = Self.milliseconds(until: lastActivity + UInt64(limits.idleTimeoutMilliseconds) * 1000)
                    if !parser.hasPartialRequest {
                        // Stopping closes an idle connection; bytes already received are a
                        // request that arrived before the stop (this thread had not read them yet).
                        if stopSeen && !Self.hasBytesWaiting(fd) { return }
                        if !idle {
                            idle = true
                            server.markIdle(id)
                        }
                    } else if parser.isReadingBody {
                        timeout = min(timeout, Self.milliseconds(until: bodyStarted + UInt64(limits.bodyTimeoutMilliseconds) * 1000))
                    } else {
                        timeout = min(timeout, Self.milliseconds(until: requestStarted + UInt64(limits.headerTimeoutMilliseconds) * 1000))
                    }
                    if stopSeen {
                        let left = Self.milliseconds(until: stopDeadline)
                        if left <= 0 { return shutDown() }
                        timeout = min(timeout, left)
                    }
                    if timeout <= 0 { return timedOut() }
                    var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                    if !stopSeen { fds.append(pollfd(fd: server.stopPipe.read, events: Int16(POLLIN), revents: 0)) }
                    let ready = poll(&fds, nfds_t(fds.count), Int32(timeout))
                    if ready < 0 { if errno == EINTR { continue } else { return } }
                    // A deadline passed: the next turn finds which.
                    if ready == 0 { continue }
                    if fds.count > 1 && fds[1].revents != 0 {
                        noteStop()
                        if !parser.hasPartialRequest && fds[0].revents == 0 { return }
                    }
                    if fds[0].revents == 0 { continue }
                    if idle && !parser.hasPartialRequest {
                        // Busy before the bytes leave the socket: until then, the bytes waiting keep it from being shed.
                        idle = false
                        server.markBusy(id)
                    }
                    let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count < 0 {
                        if errno == EAGAIN || errno == EINTR { continue }
                        return
                    }
                    if count == 0 {
                        // The client went away; a request it did not finish is not served.
                        if parser.hasPartialRequest { log(status: 0, bytes: 0) }
                        return
                    }
                    lastActivity = Self.now()
                    if !parser.hasPartialRequest { requestStarted = lastActivity }
                    parser.append(chunk[0..<count])
                case .head(let sent):
                    bodyStarted = Self.now()
                    method = sent.method
                    target = sent.target
                    // HEAD is GET without the answer's body (RFC 9110, 9.3.2).
                    answeringHead = sent.method == "HEAD"
                    var head = sent
                    if answeringHead { head.method = "GET" }
                    switch server.preflight(head, client) {
                    case .answer(let early):
                        let close = head.framing != .none || !head.keepAlive || early.closesConnection || stopSeen || server.isStopping
                        guard respond(early, close: close), !close else { return }
                        // No body: the request is complete; the parser's next event is it, skip it.
                        if case .request = parser.next() {}
                        continue
                    case .proceed(let learned):
                        context = learned
                    }
                    if head.expectsContinue && parser.bufferedBytes == 0 {
                        guard send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
                    }
                case .request(let sent):
                    method = sent.head.method
                    target = sent.head.target
                    // The head was checked first, always: its context is at hand.
                    guard let learned = context else { return }
                    context = nil
                    var request = sent
                    if answeringHead { request.head.method = "GET" }
                    let response = server.handler(request, learned, client)
                    let close = !request.head.keepAlive || response.closesConnection || stopSeen || server.isStopping
                    guard respond(response, close: close), !close else { return }
                case .failure(let error):
                    var response = ServerResponse.error(error.status, code: Self.code(error.status), message: error.message, closesConnection: true)
                    server.addErrorFields(&response)
                    _ = respond(response, close: true)
                    shutdown(fd, Int32(SHUT_WR))
                    return
                }
            }
        }

        /// The grace after a stop is over and the request has not arrived whole: `503`, closed.
        mutating func shutDown() {
            var response = ServerResponse.error(
                503, code: "SHUTTING_DOWN", message: "the server is stopping; the request did not arrive in time", closesConnection: true)
            server.addErrorFields(&response)
            _ = respond(response, close: true)
        }

        /// Whether the socket has received bytes (or the peer's close) not yet read.
        static func hasBytesWaiting(_ fd: Int32) -> Bool {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            return poll(&fds, 1, 0) > 0 && fds[0].revents != 0
        }

        static func code(_ status: Int) -> String {
            switch status {
            case 408: return "REQUEST_TIMEOUT"
            case 413: return "BODY_TOO_LARGE"
            case 415: return "UNSUPPORTED_MEDIA_TYPE"
            case 417: return "EXPECTATION_FAILED"
            case 431: return "HEADERS_TOO_LARGE"
            case 501: return "NOT_IMPLEMENTED"
            case 505: return "HTTP_VERSION_NOT_SUPPORTED"
            default: return "BAD_REQUEST"
            }
        }

        /// A client silent past a limit: mid-request it gets a 408, between requests the connection just closes.
        mutating func timedOut() {
            guard parser.hasPartialRequest else { return }
            var response = ServerResponse.error(408, code: "REQUEST_TIMEOUT", message: "the request did not arrive in time", closesConnection: true)
            server.addErrorFields(&response)
            _ = respond(response, close: true)
        }

        /// Sends an answer and logs it; `false` when the client is gone.
        mutating func respond(_ response: ServerResponse, close: Bool) -> Bool {
            if !stopSeen && server.isStopping { noteStop() }
            let sent = send(response.serialized(close: close, withBody: !answeringHead))
            answeringHead = false
            lastActivity = Self.now()
            log(status: response.status, bytes: response.body.count)
            method = nil
            target = nil
            if parser.hasPartialRequest { requestStarted = Self.now() }
            return sent
        }

        func log(status: Int, bytes: Int) {
            guard let log = server.log else { return }
            let elapsed = requestStarted == 0 ? 0 : Int64(Self.now() - requestStarted)
            log.write(
                AccessLog.Entry(client: client.peer, method: method, target: target, status: status, bytes: bytes, microseconds: elapsed))
        }

        /// Writes everything, waiting for the client to read within the write timeout.
        func send(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            var deadline = Self.now() + UInt64(server.limits.writeTimeoutMilliseconds) * 1000
            if stopSeen { deadline = min(deadline, stopDeadline) }
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { SystemCalls.send(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if written > 0 {
                    offset += written
                    continue
                }
                if written < 0 && (errno == EAGAIN || errno == EINTR) {
                    let now = Self.now()
                    guard now < deadline else { return false }
                    var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                    _ = poll(&fds, 1, Int32((deadline - now) / 1000 + 1))
                    continue
                }
                return false
            }
            return true
        }
    }
}

/// The system's text for an `errno` value.
func errorText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "error \(code)" }
    let length = strlen(text)
    return text.withMemoryRebound(to: UInt8.self, capacity: length) { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) }
}

/// A detached POSIX thread with a 1 MiB stack; `false` when `pthread_create` fails.
func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class ThreadBody {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, 1 << 20)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    #if canImport(Darwin)
    var thread: pthread_t? = nil
    #else
    var thread = pthread_t()
    #endif
    let result = pthread_create(
        &thread, &attributes,
        { pointer in
            // Linux passes the argument as an optional, macOS does not.
            Unmanaged<ThreadBody>.fromOpaque(threadArgument(pointer)).takeRetainedValue().body()
            return nil
        }, box)
    if result != 0 {
        Unmanaged<ThreadBody>.fromOpaque(box).release()
        return false
    }
    return true
}

/// A thread's start argument, given as an optional or not.
private func threadArgument(_ pointer: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer { pointer! }

nonisolated(unsafe) private var signalStopDescriptor: Int32 = -1

private func stopSignalHandler(_ signal: Int32) {
    var byte: UInt8 = 1
    _ = write(signalStopDescriptor, &byte, 1)
}

/// What a server's preflight decides from a request's head.
public enum HeadDecision<Context: Sendable>: Sendable {
    /// Read the body, then hand the request and this context to the handler.
    case proceed(Context)
    /// Send this answer at once, without reading the body.
    case answer(ServerResponse)
}

extension HTTPServer where Context == Void {
    /// A server whose preflight learns nothing for the handler: it only answers early, or lets the request through.
    public convenience init(
        listen: ListenAddress, limits: ServerLimits, log: AccessLog?,
        preflight: @escaping @Sendable (RequestHead, ClientInfo) -> ServerResponse? = { _, _ in nil },
        handler: @escaping @Sendable (ServerRequest, ClientInfo) -> ServerResponse
    ) throws(ServerError) {
        try self.init(
            listen: listen, limits: limits, log: log,
            preflight: { head, client in preflight(head, client).map { .answer($0) } ?? .proceed(()) },
            handler: { request, _, client in handler(request, client) })
    }
}
