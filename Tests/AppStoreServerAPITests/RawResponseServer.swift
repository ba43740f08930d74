import Foundation
import TestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP server for tests of the client's framing and deadline: it reads each
/// request's head, then hands the connection to `respond`, which writes whatever bytes it
/// likes, as fast or as slowly as it likes. One connection at a time.
final class RawResponseServer: @unchecked Sendable {
    let port: UInt16
    var url: URL { URL(string: "http://127.0.0.1:\(port)/raw")! }

    private let listener: Int32
    private let stopping = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)
    private let respond: @Sendable (RawConnection) -> Void

    init(respond: @escaping @Sendable (RawConnection) -> Void) throws {
        self.respond = respond
        (listener, port) = try LoopbackListener.open()
        let thread = Thread { [self] in serve() }
        thread.name = "raw-response-server"
        thread.start()
    }

    /// Stops accepting, tells a running `respond` to end, and waits (bounded) for the thread.
    func stop() {
        stopping.withLock { $0 = true }
        _ = finished.wait(timeout: .now() + 30)
        close(listener)
    }

    var isStopping: Bool { stopping.withLock { $0 } }

    private func serve() {
        defer { finished.signal() }
        LoopbackListener.serveOneAtATime(listener, while: { !isStopping }) { fd in
            let connection = RawConnection(fd: fd, server: self)
            if connection.readRequestHead() { respond(connection) }
        }
    }
}

/// One accepted connection of a ``RawResponseServer``.
struct RawConnection: Sendable {
    let fd: Int32
    unowned(unsafe) let server: RawResponseServer

    /// Reads up to the end of the request head (the client's requests here have no body).
    func readRequestHead() -> Bool {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while received.count < 65_536 {
            guard recv(fd, &byte, 1, 0) == 1 else { return false }
            received.append(byte)
            if received.count >= 4 && received.suffix(4) == [13, 10, 13, 10] { return true }
        }
        return false
    }

    /// Writes all of `bytes`; `false` when the client has gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Waits up to `milliseconds` for the client to close (or the server to stop); `true` if it did.
    /// The pace of a trickle: not a wait for something the test expects.
    func clientClosed(within milliseconds: Int32) -> Bool {
        if server.isStopping { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) > 0 else { return false }
        var scratch = [UInt8](repeating: 0, count: 512)
        return scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) } <= 0
    }
}
