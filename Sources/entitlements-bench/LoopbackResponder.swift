import Foundation
import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The least an HTTP/1.1 server can do on loopback, as `serve` is built: a thread per
/// keep-alive connection, a blocking `recv`, and one `send` of the same fixed answer for
/// each request head received (no routing, no parsing beyond the head's end, no log).
/// What `wrk` reaches against it is the machine's bound for answers of that size: the
/// kernel's loopback TCP, the threads' wake-ups and the load generator on the same cores.
final class LoopbackResponder: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let answer: [UInt8]

    /// Listens on 127.0.0.1 (a port the kernel picks) and answers every request with `body`
    /// as `200`, `Content-Type: application/json`.
    init(body: [UInt8]) throws {
        answer = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        let listener = SystemCalls.socket(family: AF_INET)
        guard listener >= 0 else { throw BenchFailure("responder: socket() failed") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                SystemCalls.bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound, SystemCalls.listen(listener, 1024) == 0 else {
            _ = SystemCalls.close(listener)
            throw BenchFailure("responder: cannot listen on 127.0.0.1")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "bench.responder.accept"
        thread.start()
    }

    /// Stops accepting; the connections end when their clients close them.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = SystemCalls.close(listener)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(fd) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Answers each request head on `fd` (a head ends with an empty line; GET carries no body).
    private func serve(_ fd: Int32) {
        defer { _ = SystemCalls.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var held = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + held, $0.count - held, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            held += count
            var start = 0
            var index = 3
            while index < held {
                if buffer[index] == 10 && buffer[index - 1] == 13 && buffer[index - 2] == 10 && buffer[index - 3] == 13 {
                    guard BenchClient.sendAll(fd, answer) else { return }
                    start = index + 1
                    index += 4
                } else {
                    index += 1
                }
            }
            if start > 0 {
                buffer.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: $0.baseAddress! + start, byteCount: held - start) }
                held -= start
            }
            guard held < buffer.count else { return }
        }
    }
}
