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

    enum Outcome {
        /// More bytes are needed (or, at end of stream, the response is whatever `complete(atEOF:)` says).
        case incomplete
        case complete(HTTPResponse)
    }

    /// Parses `bytes`; `atEOF` says the server closed the connection after them.
    static func parse(_ bytes: [UInt8], atEOF: Bool, method: String) throws(HTTPClientError) -> Outcome {
        guard let headerEnd = find([13, 10, 13, 10], in: bytes) else {
            if bytes.count > maximumHeaderBytes {
                throw HTTPClientError(.protocolError, "the response headers exceed \(maximumHeaderBytes) bytes")
            }
            if atEOF {
                throw HTTPClientError(.protocolError, "the connection closed before a complete response header (\(bytes.count) bytes received)")
            }
            return .incomplete
        }
        let head = String(decoding: bytes[0..<headerEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
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
        let body = bytes[(headerEnd + 4)...]
        if method == "HEAD" || status == 204 || status == 304 || status < 200 {
            return .complete(response)
        }
        if let encoding = response.header("Transfer-Encoding")?.lowercased(), encoding != "identity" {
            guard encoding == "chunked" else {
                throw HTTPClientError(.protocolError, "unsupported Transfer-Encoding \"\(encoding)\"")
            }
            guard let decoded = try decodeChunked(Array(body)) else {
                if atEOF { throw HTTPClientError(.protocolError, "the connection closed inside a chunked body") }
                return .incomplete
            }
            var complete = response
            complete.body = decoded
            return .complete(complete)
        }
        if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText), length >= 0 else {
                throw HTTPClientError(.protocolError, "Content-Length \"\(lengthText)\" is not a number")
            }
            guard body.count >= length else {
                if atEOF {
                    throw HTTPClientError(.protocolError, "the connection closed after \(body.count) of \(length) body bytes")
                }
                return .incomplete
            }
            var complete = response
            complete.body = Array(body.prefix(length))
            return .complete(complete)
        }
        guard atEOF else { return .incomplete }
        var complete = response
        complete.body = Array(body)
        return .complete(complete)
    }

    /// The body of a complete chunked encoding (RFC 9112 section 7.1), `nil` while incomplete.
    static func decodeChunked(_ bytes: [UInt8]) throws(HTTPClientError) -> [UInt8]? {
        var out: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = find([13, 10], in: bytes, from: index) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
            let sizeDigits = sizeText.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !sizeDigits.isEmpty, sizeDigits.count <= 8, let size = Int(sizeDigits, radix: 16) else {
                throw HTTPClientError(.protocolError, "malformed chunk size \"\(sizeText.prefix(20))\"")
            }
            index = lineEnd + 2
            if size == 0 {
                // Trailer fields, then an empty line.
                while true {
                    guard let end = find([13, 10], in: bytes, from: index) else { return nil }
                    if end == index { return out }
                    index = end + 2
                }
            }
            guard bytes.count >= index + size + 2 else { return nil }
            out.append(contentsOf: bytes[index..<(index + size)])
            guard bytes[index + size] == 13, bytes[index + size + 1] == 10 else {
                throw HTTPClientError(.protocolError, "a chunk is not followed by CRLF")
            }
            index += size + 2
        }
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
