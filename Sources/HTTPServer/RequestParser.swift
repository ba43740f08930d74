/// Bounds the parser enforces while it reads a request.
public struct ParserLimits: Sendable, Hashable {
    /// Request line, header fields and the blank line after them (and, separately, a chunked body's trailer).
    public var maxHeaderBytes: Int
    /// How many header fields a request may carry.
    public var maxHeaderFields: Int
    /// The largest body accepted, as declared by `Content-Length` or as the sum of a chunked body's chunks.
    public var maxBodyBytes: Int
    /// The longest chunk-size line (size and extensions) of a chunked body.
    public var maxChunkLineBytes: Int

    public init(maxBodyBytes: Int, maxHeaderBytes: Int = 16 * 1024, maxHeaderFields: Int = 100, maxChunkLineBytes: Int = 1024) {
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderFields = maxHeaderFields
        self.maxChunkLineBytes = maxChunkLineBytes
    }
}

/// Why a request cannot be read: the status to answer with, and a message a person can act on.
/// After one, the connection's framing cannot be trusted: answer and close.
public struct HTTPParseError: Error, Sendable, Hashable {
    public var status: Int
    public var message: String

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// What the parser found in the bytes given so far.
public enum ParseEvent: Sendable, Hashable {
    /// Nothing complete yet: read more bytes.
    case needMore
    /// A valid request head; its body (if any) follows. Emitted once per request, before `request`.
    case head(RequestHead)
    /// A complete request. Bytes after it (pipelining) stay for the next request.
    case request(ServerRequest)
    /// The request is malformed or over a limit; the parser accepts nothing more.
    case failure(HTTPParseError)
}

/// An HTTP/1.1 request parser (RFC 9112): a pure state machine over bytes, no I/O.
///
/// Feed it bytes as they arrive with ``append(_:)``, then call ``next()``
/// until it answers ``ParseEvent/needMore``. Any split of the same bytes
/// gives the same events. Framing is strict, because it is the security
/// boundary against request smuggling: lines end in CRLF (a bare CR or LF is
/// an error), no obsolete line folding, no whitespace before a field's colon,
/// `Content-Length` is one decimal number (repeated only with the same value),
/// `Content-Length` together with `Transfer-Encoding` is refused, and the only
/// transfer coding is `chunked`. Sizes are checked before bytes are
/// buffered past them: a declared body over the limit fails at the head.
public struct RequestParser: Sendable {
    public let limits: ParserLimits

    private enum State: Sendable {
        case head
        case body(RequestHead)
        case failed(HTTPParseError)
    }

    private enum Chunk: Sendable {
        case sizeLine
        case data(remaining: Int)
        case dataEnd
        case trailer
    }

    private var state = State.head
    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var start = 0
    /// Where the line being read begins (head, chunk-size line, trailer).
    private var lineStart = 0
    /// Where the search for the next LF resumes.
    private var scan = 0

    // The head being read.
    private var requestLine: (method: String, target: String, minor: Int)?
    private var fields: [HTTPField] = []
    private var leadingBlankLines = 0

    // The body being read.
    private var headEmitted = false
    private var body: [UInt8] = []
    private var chunk = Chunk.sizeLine
    private var trailerBytes = 0

    public init(limits: ParserLimits) { self.limits = limits }

    /// Adds bytes received from the connection.
    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0 && (start == buffer.count || start >= 1 << 16) {
            buffer.removeFirst(start)
            lineStart -= start
            scan -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Whether part of a request has arrived (a connection with none is idle between requests).
    public var hasPartialRequest: Bool {
        switch state {
        case .head: return buffer.count > start
        case .body, .failed: return true
        }
    }

    /// Whether the head of the current request is complete (its body may still be arriving).
    public var isReadingBody: Bool {
        if case .body = state { return true }
        return false
    }

    /// Bytes received and not yet consumed.
    public var bufferedBytes: Int { buffer.count - start }

    /// The next event from the bytes given so far.
    public mutating func next() -> ParseEvent {
        switch state {
        case .failed(let error):
            return .failure(error)
        case .head:
            return readHead()
        case .body(let head):
            if !headEmitted {
                headEmitted = true
                return .head(head)
            }
            return readBody(head)
        }
    }

    private mutating func fail(_ status: Int, _ message: String) -> ParseEvent {
        let error = HTTPParseError(status, message)
        state = .failed(error)
        return .failure(error)
    }

    // MARK: Head

    private mutating func readHead() -> ParseEvent {
        while true {
            guard let lf = nextLF() else {
                if buffer.count - start > limits.maxHeaderBytes {
                    return fail(431, "the request line and header fields exceed \(limits.maxHeaderBytes) bytes")
                }
                return .needMore
            }
            if lf + 1 - start > limits.maxHeaderBytes {
                return fail(431, "the request line and header fields exceed \(limits.maxHeaderBytes) bytes")
            }
            guard lf > lineStart, buffer[lf - 1] == 0x0D else { return fail(400, "a line ends in a bare LF (CRLF is required)") }
            let line = buffer[lineStart..<(lf - 1)]
            lineStart = lf + 1
            if line.contains(0x0D) { return fail(400, "a bare CR inside a line") }
            if requestLine == nil {
                if line.isEmpty {
                    leadingBlankLines += 1
                    if leadingBlankLines > 8 { return fail(400, "blank lines instead of a request line") }
                    continue
                }
                switch Self.parseRequestLine(line) {
                case .success(let parsed): requestLine = parsed
                case .failure(let error): return fail(error.status, error.message)
                }
            } else if line.isEmpty {
                start = lf + 1
                return finishHead()
            } else {
                if fields.count >= limits.maxHeaderFields {
                    return fail(431, "more than \(limits.maxHeaderFields) header fields")
                }
                switch Self.parseField(line) {
                case .success(let field): fields.append(field)
                case .failure(let error): return fail(error.status, error.message)
                }
            }
        }
    }

    /// The index of the next LF at or after `scan`, advancing `scan`.
    private mutating func nextLF() -> Int? {
        var index = max(scan, lineStart)
        while index < buffer.count {
            if buffer[index] == 0x0A {
                scan = index + 1
                return index
            }
            index += 1
        }
        scan = index
        return nil
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            // RFC 9110 tchar's symbols.
            return true
        default:
            return false
        }
    }

    static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<(method: String, target: String, minor: Int), HTTPParseError> {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            return .failure(HTTPParseError(400, "malformed request line (expected METHOD SP target SP HTTP/1.1)"))
        }
        guard parts[0].count <= 32, parts[0].allSatisfy(isTokenByte) else {
            return .failure(HTTPParseError(400, "malformed method in the request line"))
        }
        guard parts[1].allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            return .failure(HTTPParseError(400, "the request target holds a byte that is not visible ASCII"))
        }
        var target = String(decoding: parts[1], as: UTF8.self)
        if !target.hasPrefix("/"), target != "*" {
            // RFC 9112 section 3.2.2: a server accepts the absolute form too; its path and
            // query are the target (the authority in it is not this server's concern).
            guard let origin = originForm(ofAbsolute: parts[1]) else {
                return .failure(HTTPParseError(400, "the request target must be a path beginning with / or an absolute http(s) URI"))
            }
            target = origin
        }
        let version = Array(parts[2])
        let prefix = Array("HTTP/".utf8)
        guard version.count == 8, version.starts(with: prefix), version[6] == UInt8(ascii: "."),
            (0x30...0x39).contains(version[5]), (0x30...0x39).contains(version[7])
        else {
            return .failure(HTTPParseError(400, "malformed HTTP version in the request line"))
        }
        guard version[5] == UInt8(ascii: "1"), version[7] <= UInt8(ascii: "1") else {
            return .failure(HTTPParseError(505, "only HTTP/1.1 and HTTP/1.0 are served"))
        }
        return .success((String(decoding: parts[0], as: UTF8.self), target, Int(version[7] - 0x30)))
    }

    /// The origin form (`/path?query`) of an absolute-form target (`http://host:port/path?query`,
    /// either scheme in any case), or `nil` when `target` is not one: `/` when it has no path.
    static func originForm(ofAbsolute target: ArraySlice<UInt8>) -> String? {
        let lowered = target.prefix(8).map { $0 | 0x20 }
        let scheme: Int
        if lowered.starts(with: Array("https://".utf8)) {
            scheme = 8
        } else if lowered.starts(with: Array("http://".utf8)) {
            scheme = 7
        } else {
            return nil
        }
        let afterScheme = target.dropFirst(scheme)
        let pathStart = afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        let authority = afterScheme[..<(pathStart ?? afterScheme.endIndex)]
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        let rest = pathStart.map { afterScheme[$0...] } ?? []
        guard rest.first != UInt8(ascii: "#") else { return nil }
        let path = String(decoding: rest, as: UTF8.self)
        return path.hasPrefix("/") ? path : "/" + path
    }

    static func parseField(_ line: ArraySlice<UInt8>) -> Result<HTTPField, HTTPParseError> {
        guard let first = line.first, first != 0x20, first != 0x09 else {
            return .failure(HTTPParseError(400, "obsolete line folding (a header line starting with whitespace) is not accepted"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(HTTPParseError(400, "a header line without a colon"))
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            return .failure(HTTPParseError(400, "malformed header field name (no whitespace before the colon)"))
        }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            return .failure(HTTPParseError(400, "a control character in the value of header field \(String(decoding: name, as: UTF8.self))"))
        }
        return .success(HTTPField(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }

    static func commaList(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingSpaces().lowercased() }
            .filter { !$0.isEmpty }
    }

    private mutating func finishHead() -> ParseEvent {
        guard let (method, target, minor) = requestLine else { return fail(400, "no request line") }
        let head = RequestHead(
            method: method, target: target, minorVersion: minor, fields: fields, framing: .none, keepAlive: minor == 1,
            expectsContinue: false)
        requestLine = nil
        fields = []
        leadingBlankLines = 0
        var framed = head
        if minor == 1 && head.fields("host").count != 1 {
            return fail(400, "an HTTP/1.1 request needs exactly one Host header field")
        }
        let encodings = head.fields("transfer-encoding")
        let lengths = head.fields("content-length")
        if !encodings.isEmpty {
            if !lengths.isEmpty {
                return fail(400, "both Content-Length and Transfer-Encoding: refused (request smuggling)")
            }
            if minor == 0 { return fail(400, "Transfer-Encoding in an HTTP/1.0 request") }
            let codings = Self.commaList(encodings)
            if codings == ["chunked"] {
                framed.framing = .chunked
            } else if codings.filter({ $0 == "chunked" }).count > 1 {
                // A sender never applies chunked twice (RFC 9112, 6.1): a request that does is malformed.
                return fail(400, "Transfer-Encoding names chunked more than once")
            } else if codings.last == "chunked" {
                return fail(501, "transfer coding \(codings.dropLast().joined(separator: ", ")) is not supported (only chunked)")
            } else {
                return fail(400, "Transfer-Encoding must end in chunked")
            }
        } else if !lengths.isEmpty {
            var value: Int? = nil
            for element in lengths.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
                let digits = element.trimmingSpaces()
                guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(digits)
                else {
                    return fail(400, "Content-Length must be one decimal number")
                }
                if let previous = value, previous != number {
                    return fail(400, "differing Content-Length values: refused (request smuggling)")
                }
                value = number
            }
            let length = value ?? 0
            if length > limits.maxBodyBytes {
                return fail(413, "the body of \(length) bytes exceeds the limit of \(limits.maxBodyBytes) bytes")
            }
            framed.framing = length > 0 ? .length(length) : .none
        }
        // A compressed body would be read as its compressed bytes: refused, so that the
        // sender learns to send it as it is (RFC 9110, 15.5.16).
        let contentCodings = Self.commaList(head.fields("content-encoding")).filter { $0 != "identity" }
        if let coding = contentCodings.first, framed.framing != .none {
            return fail(415, "Content-Encoding \(coding) is not supported: send the body uncompressed")
        }
        if let expect = head.field("expect") {
            guard expect.trimmingSpaces().lowercased() == "100-continue", head.fields("expect").count == 1 else {
                return fail(417, "the only expectation served is Expect: 100-continue")
            }
            framed.expectsContinue = framed.framing != .none
        }
        let connection = Self.commaList(head.fields("connection"))
        if connection.contains("close") || minor == 0 { framed.keepAlive = false }
        state = .body(framed)
        headEmitted = false
        body = []
        chunk = .sizeLine
        trailerBytes = 0
        lineStart = start
        scan = start
        return next()
    }

    // MARK: Body

    private mutating func complete(_ head: RequestHead) -> ParseEvent {
        let request = ServerRequest(head: head, body: body)
        body = []
        state = .head
        lineStart = start
        scan = start
        return .request(request)
    }

    private mutating func readBody(_ head: RequestHead) -> ParseEvent {
        switch head.framing {
        case .none:
            return complete(head)
        case .length(let length):
            guard buffer.count - start >= length else { return .needMore }
            body = Array(buffer[start..<(start + length)])
            start += length
            return complete(head)
        case .chunked:
            return readChunks(head)
        }
    }

    private mutating func readChunks(_ head: RequestHead) -> ParseEvent {
        while true {
            switch chunk {
            case .sizeLine:
                guard let lf = nextLF() else {
                    if buffer.count - lineStart > limits.maxChunkLineBytes {
                        return fail(400, "a chunk-size line longer than \(limits.maxChunkLineBytes) bytes")
                    }
                    return .needMore
                }
                if lf + 1 - lineStart > limits.maxChunkLineBytes {
                    return fail(400, "a chunk-size line longer than \(limits.maxChunkLineBytes) bytes")
                }
                guard lf > lineStart, buffer[lf - 1] == 0x0D else { return fail(400, "a chunk-size line ends in a bare LF") }
                let line = buffer[lineStart..<(lf - 1)]
                start = lf + 1
                lineStart = start
                guard let size = parseChunkSize(line) else { return fail(400, "malformed chunk size") }
                if size > limits.maxBodyBytes - body.count {
                    return fail(413, "the chunked body exceeds the limit of \(limits.maxBodyBytes) bytes")
                }
                chunk = size == 0 ? .trailer : .data(remaining: size)
            case .data(let remaining):
                let available = min(remaining, buffer.count - start)
                if available == 0 { return .needMore }
                body.append(contentsOf: buffer[start..<(start + available)])
                start += available
                chunk = remaining == available ? .dataEnd : .data(remaining: remaining - available)
            case .dataEnd:
                guard buffer.count - start >= 2 else { return .needMore }
                guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else { return fail(400, "chunk data not followed by CRLF") }
                start += 2
                lineStart = start
                scan = start
                chunk = .sizeLine
            case .trailer:
                guard let lf = nextLF() else {
                    if trailerBytes + buffer.count - lineStart > limits.maxHeaderBytes {
                        return fail(431, "the chunked body's trailer exceeds \(limits.maxHeaderBytes) bytes")
                    }
                    return .needMore
                }
                trailerBytes += lf + 1 - lineStart
                if trailerBytes > limits.maxHeaderBytes {
                    return fail(431, "the chunked body's trailer exceeds \(limits.maxHeaderBytes) bytes")
                }
                guard lf > lineStart, buffer[lf - 1] == 0x0D else { return fail(400, "a trailer line ends in a bare LF") }
                let line = buffer[lineStart..<(lf - 1)]
                start = lf + 1
                lineStart = start
                if line.isEmpty { return complete(head) }
                // Trailer fields are validated and ignored: nothing in them changes the request.
                if line.contains(0x0D) { return fail(400, "a bare CR inside a trailer line") }
                if case .failure(let error) = Self.parseField(line) { return fail(error.status, error.message) }
            }
        }
    }

    /// `1*HEXDIG [ BWS ";" extension... ]`, or `nil`.
    private func parseChunkSize(_ line: ArraySlice<UInt8>) -> Int? {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex {
            let byte = line[index]
            let value: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(byte - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = Int(byte - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = Int(byte - 0x41 + 10)
            default: value = -1
            }
            if value < 0 { break }
            digits += 1
            if digits > 15 { return nil }
            size = size * 16 + value
            index += 1
        }
        guard digits > 0 else { return nil }
        var rest = line[index...]
        while let byte = rest.first, byte == 0x20 || byte == 0x09 { rest = rest.dropFirst() }
        if rest.isEmpty { return size }
        guard rest.first == UInt8(ascii: ";") else { return nil }
        guard rest.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { return nil }
        return size
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let c = scalars.first, c == " " || c == "\t" { scalars = scalars.dropFirst() }
        while let c = scalars.last, c == " " || c == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
