@testable import AppStoreServerAPI
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The client reads a body in time proportional to its size, chunked or not, and its
/// deadline covers the whole exchange, however the peer paces its bytes.
@Suite struct HTTPClientBodyTests {
    /// `count` bytes that do not repeat with any short period (a block of prime length, varied).
    static func body(count: Int) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: 1_000_003)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for index in block.indices {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            block[index] = UInt8(truncatingIfNeeded: state >> 56)
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var round: UInt8 = 0
        while out.count < count {
            let start = out.count
            out.append(contentsOf: block.prefix(count - out.count))
            out[start] = round
            round &+= 1
        }
        return out
    }

    /// `body` as a chunked response: chunk sizes from 1 byte to 128 KiB, some with extensions
    /// or upper-case hex, and a trailer.
    static func chunkedResponse(_ body: [UInt8]) -> [UInt8] {
        var out = Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        out.reserveCapacity(body.count + body.count / 1000 + 1024)
        var state: UInt64 = 42
        var offset = 0
        var number = 0
        while offset < body.count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let size = min(body.count - offset, number % 50 == 0 ? 1 : Int(state >> 47) + 1)
            var line = String(size, radix: 16, uppercase: number % 3 == 0)
            if number % 7 == 0 { line += ";name=value" }
            out.append(contentsOf: Array((line + "\r\n").utf8))
            out.append(contentsOf: body[offset..<(offset + size)])
            out.append(contentsOf: [13, 10])
            offset += size
            number += 1
        }
        out.append(contentsOf: Array("0\r\nX-Checksum: none\r\n\r\n".utf8))
        return out
    }

    /// Sends `request` on a thread of its own; `nil` when it did not end within `seconds`
    /// (a deadline the client did not keep; the thread is left behind).
    static func exchange(_ client: HTTPClient, _ request: HTTPRequest, within seconds: Double) -> Result<HTTPResponse, HTTPClientError>? {
        let result = Mutex<Result<HTTPResponse, HTTPClientError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let outcome: Result<HTTPResponse, HTTPClientError>
            do throws(HTTPClientError) { outcome = .success(try client.send(request)) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return result.withLock { $0 }
    }

    @Test func aThirtyMebibyteChunkedBodyDecodesByteExactlyWithinTheDeadline() throws {
        let body = Self.body(count: 30 << 20)
        let response = Self.chunkedResponse(body)
        let server = try RawResponseServer { connection in connection.write(response) }
        defer { server.stop() }

        // Read in linear time this takes a second or two; read in quadratic time, minutes.
        var options = HTTPClient.Options()
        options.timeout = 15
        let client = try HTTPClient(options: options)
        // The client must end within its own deadline; the margin only bounds this test's wait.
        guard let outcome = Self.exchange(client, HTTPRequest(method: "GET", url: server.url), within: options.timeout + 25) else {
            Issue.record("the client did not end within its \(options.timeout) s deadline")
            return
        }
        switch outcome {
        case .success(let received):
            #expect(received.status == 200)
            #expect(received.body.count == body.count)
            #expect(received.body == body, "byte-exact")
        case .failure(let error):
            Issue.record("\(error)")
        }
    }

    /// The reader goes on from where it stopped: a body fed a few bytes at a time, at every
    /// kind of boundary, gives the same bytes.
    @Test func theReaderResumesAcrossReadsOfAnySize() throws {
        let body = Self.body(count: 300_000)
        let response = Self.chunkedResponse(body)
        for piece in [1, 7, 4096, 65_536] {
            var reader = HTTPResponseReader(method: "GET")
            var offset = 0
            var decoded: HTTPResponse? = nil
            while offset < response.count {
                let end = min(response.count, offset + piece)
                reader.append(response[offset..<end])
                offset = end
                if case .complete(let complete) = try reader.next(atEOF: false) {
                    decoded = complete
                    break
                }
            }
            #expect(offset == response.count, "complete exactly at the last byte (pieces of \(piece))")
            #expect(decoded?.body == body, "pieces of \(piece)")
        }
    }

    @Test func anOverlongChunkLineIsAProtocolError() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        for text in [head + "1;" + String(repeating: "x", count: 10_000), head + "0\r\nX: " + String(repeating: "y", count: 10_000)] {
            #expect(throws: HTTPClientError.self) { try HTTPResponseParser.parse(Array(text.utf8), atEOF: false, method: "GET") }
        }
    }

    /// Bytes that are always ready do not keep a connection past its deadline.
    @Test func aStreamChecksTheDeadlineEvenWhenBytesAreReady() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer {
            close(pair[0])
            close(pair[1])
        }
        let ready = [UInt8](repeating: 0x41, count: 100)
        #expect(send(pair[1], ready, ready.count, 0) == ready.count)
        let expired = PlainStream(socket: pair[0], deadline: Deadline(seconds: 0))
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect {
            _ = try expired.read(into: &buffer)
        } throws: { ($0 as? HTTPClientError)?.code == .timeout }
        #expect {
            try expired.write(ready)
        } throws: { ($0 as? HTTPClientError)?.code == .timeout }

        let live = PlainStream(socket: pair[0], deadline: Deadline(seconds: 30))
        #expect(try live.read(into: &buffer) == 64, "within the deadline the bytes are read")
    }

    enum Trickle: String, CaseIterable, Sendable {
        case head, contentLength, chunked
    }

    /// A peer that sends a byte every few milliseconds forever (in the head, a body with a
    /// length, or a chunked body) is cut off at the deadline configured here.
    @Test(arguments: Trickle.allCases)
    func aTricklingPeerIsCutOffAtTheDeadline(_ trickle: Trickle) throws {
        let server = try RawResponseServer { connection in
            switch trickle {
            case .head: connection.write(Array("HTTP/1.1 200 OK\r\nX-Slow: ".utf8))
            case .contentLength: connection.write(Array("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n".utf8))
            case .chunked: connection.write(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
            }
            // Until the client gives up (or 60 s, so that a client that never does fails the test).
            for _ in 0..<3_000 {
                let sent = connection.write(trickle == .chunked ? Array("1\r\nx\r\n".utf8) : [UInt8(ascii: "x")])
                if !sent || connection.clientClosed(within: 20) { return }
            }
        }
        defer { server.stop() }
        var options = HTTPClient.Options()
        options.timeout = 1
        let client = try HTTPClient(options: options)
        let outcome = try #require(Self.exchange(client, HTTPRequest(method: "GET", url: server.url), within: 90))
        guard case .failure(let error) = outcome else {
            Issue.record("a response that never ends was accepted")
            return
        }
        #expect(error.code == .timeout, "\(error)")
        #expect(error.message.contains("1.0 s"), "\(error.message)")
    }
}
