import Foundation

/// One HTTP/1.1 request.
public struct HTTPRequest: Sendable {
    public var method: String
    /// `http` or `https` URL with host, optional port, path and query (already percent-encoded).
    public var url: URL
    /// Header fields besides `Host`, `Content-Length` and `Connection`, which the client writes.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// One HTTP response, read whole.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header field `name` (case-insensitive), else `nil`.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

/// Sends one request and returns its response: ``HTTPClient`` in production, a stub in tests.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse
}

/// Why a request got no HTTP response.
public struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The host name does not resolve, or no address accepted the connection.
        public static let connectionFailed = Code(rawValue: "CONNECTION_FAILED")
        /// The server's certificate did not verify (untrusted, expired, or issued for another host name).
        public static let certificateRejected = Code(rawValue: "TLS_CERTIFICATE_REJECTED")
        /// The TLS handshake or a TLS record failed for another reason.
        public static let tlsFailure = Code(rawValue: "TLS_FAILURE")
        /// The request did not complete within the time allowed.
        public static let timeout = Code(rawValue: "TIMEOUT")
        /// The server's answer is not well-formed HTTP/1.1, or is larger than allowed.
        public static let protocolError = Code(rawValue: "HTTP_PROTOCOL_ERROR")
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Reads an HTTP/1.1 response from the bytes received so far: a pure function of them.
enum HTTPResponseParser {
    static let maximumHeaderBytes = 64 << 10
    /// The longest chunk-size line (with its extensions) or trailer line of a chunked body.
    static let maximumLineBytes = 8 << 10

    enum Outcome {
        /// More bytes are needed (or, at end of stream, the response is whatever `complete(atEOF:)` says).
        case incomplete
        case complete(HTTPResponse)
    }

    /// Parses `bytes`; `atEOF` says the server closed the connection after them.
    static func parse(_ bytes: [UInt8], atEOF: Bool, method: String) throws(HTTPClientError) -> Outcome {
        var reader = HTTPResponseReader(method: method)
        reader.append(bytes[...])
        return try reader.next(atEOF: atEOF)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int = 0) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] {
                var match = true
                for offset in 1..<needle.count where bytes[index + offset] != needle[offset] {
                    match = false
                    break
                }
                if match { return index }
            }
            index += 1
        }
        return nil
    }
}

/// Reads one HTTP/1.1 response as its bytes arrive: each call to ``next(atEOF:)`` goes on
/// from where the previous one stopped, so reading a response costs time in proportion to
/// its size, however it is split into reads (a chunked body included).
struct HTTPResponseReader {
    let method: String
    /// Every byte received, the head included.
    private(set) var received: [UInt8] = []
    /// How many leading bytes of `received` are known to hold no end of the head.
    private var headSearched = 0
    private var head: HTTPResponse?
    private var framing = Framing.untilClose
    /// The decoder of a chunked body (kept apart from `framing` so that it is mutated in place).
    private var chunked: ChunkedBodyDecoder?

    private enum Framing {
        /// No body (HEAD, 1xx, 204, 304).
        case none
        case length(Int)
        case chunked
        /// The body ends when the server closes the connection.
        case untilClose
    }

    init(method: String) { self.method = method }

    /// The status and headers, once they have been read (the body left empty).
    var headRead: HTTPResponse? { head }

    mutating func append(_ bytes: ArraySlice<UInt8>) { received.append(contentsOf: bytes) }

    /// The response once `received` holds all of it; `atEOF` says the server closed the connection.
    mutating func next(atEOF: Bool) throws(HTTPClientError) -> HTTPResponseParser.Outcome {
        if head == nil {
            guard let headEnd = HTTPResponseParser.find([13, 10, 13, 10], in: received, from: headSearched) else {
                headSearched = max(0, received.count - 3)
                if received.count > HTTPResponseParser.maximumHeaderBytes {
                    throw HTTPClientError(.protocolError, "the response headers exceed \(HTTPResponseParser.maximumHeaderBytes) bytes")
                }
                if atEOF {
                    throw HTTPClientError(
                        .protocolError, "the connection closed before a complete response header (\(received.count) bytes received)")
                }
                return .incomplete
            }
            try readHead(end: headEnd)
        }
        let response = head!
        let bodyStart = headSearched
        switch framing {
        case .none:
            return .complete(response)
        case .chunked:
            guard try chunked!.decode(received) else {
                if atEOF { throw HTTPClientError(.protocolError, "the connection closed inside a chunked body") }
                return .incomplete
            }
            var complete = response
            complete.body = chunked!.body
            return .complete(complete)
        case .length(let length):
            let available = received.count - bodyStart
            guard available >= length else {
                if atEOF {
                    throw HTTPClientError(.protocolError, "the connection closed after \(available) of \(length) body bytes")
                }
                return .incomplete
            }
            var complete = response
            complete.body = Array(received[bodyStart..<(bodyStart + length)])
            return .complete(complete)
        case .untilClose:
            guard atEOF else { return .incomplete }
            var complete = response
            complete.body = Array(received[bodyStart...])
            return .complete(complete)
        }
    }

    /// Reads the status line and header fields ending at `end` (the CRLF CRLF), and how the body is framed.
    private mutating func readHead(end headEnd: Int) throws(HTTPClientError) {
        let text = String(decoding: received[0..<headEnd], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]), status >= 100 else {
            throw HTTPClientError(.protocolError, "not an HTTP/1.1 status line: \"\(statusLine.prefix(80))\"")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw HTTPClientError(.protocolError, "malformed response header line \"\(line.prefix(80))\"")
            }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let response = HTTPResponse(status: status, headers: headers, body: [])
        let bodyStart = headEnd + 4
        if method == "HEAD" || status == 204 || status == 304 || status < 200 {
            framing = .none
        } else if let encoding = response.header("Transfer-Encoding")?.lowercased(), encoding != "identity" {
            guard encoding == "chunked" else {
                throw HTTPClientError(.protocolError, "unsupported Transfer-Encoding \"\(encoding)\"")
            }
            framing = .chunked
            chunked = ChunkedBodyDecoder(start: bodyStart)
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText), length >= 0 else {
                throw HTTPClientError(.protocolError, "Content-Length \"\(lengthText)\" is not a number")
            }
            framing = .length(length)
        } else {
            framing = .untilClose
        }
        head = response
        headSearched = bodyStart
    }
}

/// Decodes a chunked body (RFC 9112 section 7.1) as its bytes arrive, resuming where it
/// stopped: every byte is examined once, but for a line not yet complete (bounded by
/// ``HTTPResponseParser/maximumLineBytes``).
struct ChunkedBodyDecoder {
    /// The body decoded so far.
    private(set) var body: [UInt8] = []
    /// The first byte not yet decoded.
    private var index: Int
    /// Where to go on looking for the end of the current line.
    private var searchFrom: Int
    private var phase = Phase.size
    private var trailerBytes = 0

    private enum Phase {
        case size
        case data(Int)
        case trailer
        case done
    }

    /// - Parameter start: where the body begins in the bytes given to ``decode(_:)``.
    init(start: Int) {
        index = start
        searchFrom = start
    }

    /// Decodes what `bytes` (every byte received, growing between calls) hold past the
    /// previous call; `true` once the last chunk and the trailer have arrived.
    mutating func decode(_ bytes: [UInt8]) throws(HTTPClientError) -> Bool {
        while true {
            switch phase {
            case .done:
                return true
            case .size:
                guard let lineEnd = try lineEnd(in: bytes, what: "chunk size line") else { return false }
                let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                let sizeDigits = sizeText.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard !sizeDigits.isEmpty, sizeDigits.count <= 8, let size = Int(sizeDigits, radix: 16) else {
                    throw HTTPClientError(.protocolError, "malformed chunk size \"\(sizeText.prefix(20))\"")
                }
                advance(to: lineEnd + 2)
                phase = size == 0 ? .trailer : .data(size)
            case .data(let size):
                guard bytes.count >= index + size + 2 else { return false }
                guard bytes[index + size] == 13, bytes[index + size + 1] == 10 else {
                    throw HTTPClientError(.protocolError, "a chunk is not followed by CRLF")
                }
                body.append(contentsOf: bytes[index..<(index + size)])
                advance(to: index + size + 2)
                phase = .size
            case .trailer:
                // Trailer fields, then an empty line.
                guard let lineEnd = try lineEnd(in: bytes, what: "trailer line") else { return false }
                trailerBytes += lineEnd + 2 - index
                if trailerBytes > HTTPResponseParser.maximumHeaderBytes {
                    throw HTTPClientError(.protocolError, "the chunked body's trailer exceeds \(HTTPResponseParser.maximumHeaderBytes) bytes")
                }
                let empty = lineEnd == index
                advance(to: lineEnd + 2)
                if empty { phase = .done }
            }
        }
    }

    private mutating func advance(to next: Int) {
        index = next
        searchFrom = next
    }

    /// The CRLF ending the line at `index`, `nil` while it has not arrived.
    private mutating func lineEnd(in bytes: [UInt8], what: String) throws(HTTPClientError) -> Int? {
        let end = HTTPResponseParser.find([13, 10], in: bytes, from: searchFrom)
        if let end, end - index <= HTTPResponseParser.maximumLineBytes { return end }
        searchFrom = max(index, bytes.count - 1)
        if (end ?? bytes.count) - index > HTTPResponseParser.maximumLineBytes {
            throw HTTPClientError(.protocolError, "a \(what) of the chunked body exceeds \(HTTPResponseParser.maximumLineBytes) bytes")
        }
        return nil
    }
}
