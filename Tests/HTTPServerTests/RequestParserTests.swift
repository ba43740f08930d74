import Testing

@testable import HTTPServer

/// The parser is a pure state machine: every split of the same bytes gives the same events.
@Suite("Request parser")
struct RequestParserTests {
    static let limits = ParserLimits(maxBodyBytes: 64, maxHeaderBytes: 256, maxHeaderFields: 8, maxChunkLineBytes: 32)

    /// Feeds `chunks` in order, collecting every event (the parser's answer after each append, until it needs more or fails).
    static func events(_ chunks: [[UInt8]], limits: ParserLimits = limits) -> [ParseEvent] {
        var parser = RequestParser(limits: limits)
        var events: [ParseEvent] = []
        for chunk in chunks {
            parser.append(chunk)
            while true {
                let event = parser.next()
                if event == .needMore { break }
                events.append(event)
                if case .failure = event { return events }
            }
        }
        return events
    }

    /// The events for the whole input, asserting that every two-part split and the byte-by-byte feed give the same.
    static func eventsAtEverySplit(_ text: String, limits: ParserLimits = limits, sourceLocation: SourceLocation = #_sourceLocation) -> [ParseEvent] {
        let bytes = Array(text.utf8)
        let whole = events([bytes], limits: limits)
        for split in 0...bytes.count {
            let parts = events([Array(bytes[..<split]), Array(bytes[split...])], limits: limits)
            #expect(parts == whole, "split at \(split) of \(text.debugDescription)", sourceLocation: sourceLocation)
        }
        let single = events(bytes.map { [$0] }, limits: limits)
        #expect(single == whole, "byte by byte: \(text.debugDescription)", sourceLocation: sourceLocation)
        return whole
    }

    static func requests(_ events: [ParseEvent]) -> [ServerRequest] {
        events.compactMap { if case .request(let request) = $0 { return request } else { return nil } }
    }

    static func failure(_ events: [ParseEvent]) -> HTTPParseError? {
        if case .failure(let error)? = events.last { return error }
        return nil
    }

    @Test("a GET, then a POST with Content-Length, pipelined: heads first, then the complete requests")
    func pipelined() {
        let text = "GET /health HTTP/1.1\r\nHost: a\r\n\r\nPOST /notifications HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
        let events = Self.eventsAtEverySplit(text)
        let requests = Self.requests(events)
        #expect(events.count == 4)
        #expect(requests.count == 2)
        #expect(requests[0].head.method == "GET")
        #expect(requests[0].head.path == "/health")
        #expect(requests[0].head.keepAlive)
        #expect(requests[1].head.framing == .length(5))
        #expect(requests[1].body == Array("hello".utf8))
    }

    @Test("a chunked body with extensions and a trailer is reassembled")
    func chunked() {
        let text = "POST /t HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        let requests = Self.requests(Self.eventsAtEverySplit(text))
        #expect(requests.count == 2)
        #expect(requests[0].body == Array("hello world".utf8))
        #expect(requests[0].head.framing == .chunked)
        #expect(requests[1].head.target == "/")
    }

    @Test("query, Connection: close, HTTP/1.0, Expect: 100-continue, leading blank line")
    func headSemantics() {
        let text = "\r\nGET /customers?at=1&x=%20 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        let request = Self.requests(Self.eventsAtEverySplit(text))[0]
        #expect(request.head.query == "at=1&x=%20")
        #expect(!request.head.keepAlive)
        let old = Self.requests(Self.eventsAtEverySplit("GET / HTTP/1.0\r\n\r\n"))[0]
        #expect(old.head.minorVersion == 0)
        #expect(!old.head.keepAlive)
        let events = Self.eventsAtEverySplit("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nok")
        guard case .head(let head) = events[0] else {
            Issue.record("no head first")
            return
        }
        #expect(head.expectsContinue)
        #expect(Self.requests(events)[0].body == Array("ok".utf8))
    }

    @Test("an absolute-form target is served as its path and query")
    func absoluteForm() {
        let cases: [(String, String, String?)] = [
            ("http://127.0.0.1:8080/customers/1?at=2", "/customers/1", "at=2"),
            ("HTTPS://Example.com/health", "/health", nil),
            ("http://example.com", "/", nil),
            ("http://example.com?x=1", "/", "x=1"),
        ]
        for (target, path, query) in cases {
            let requests = Self.requests(Self.eventsAtEverySplit("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n"))
            #expect(requests.count == 1, "\(target)")
            #expect(requests.first.map { String($0.head.path) } == path, "\(target)")
            #expect(requests.first?.head.query.map(String.init) == query, "\(target)")
        }
    }

    @Test("Content-Encoding identity is the body as sent; a bodiless request's coding is not looked at")
    func identityCoding() {
        let text = "POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc"
        #expect(Self.requests(Self.eventsAtEverySplit(text)).map(\.body) == [Array("abc".utf8)])
        let bodiless = "GET / HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\n\r\n"
        #expect(Self.requests(Self.eventsAtEverySplit(bodiless)).count == 1)
    }

    @Test("identical repeated Content-Length values are one length")
    func repeatedLength() {
        let text = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc"
        #expect(Self.requests(Self.eventsAtEverySplit(text))[0].body == Array("abc".utf8))
    }

    @Test(
        "malformed and hostile heads are refused with the right status, at every split",
        arguments: [
            ("GET /\r\nHost: a\r\n\r\n", 400),  // two parts
            ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // double space
            ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // not a token
            ("GET x/y HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // neither origin nor absolute form
            ("GET ftp://x/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // not an http(s) URI
            ("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // no authority
            ("GET http://user@x/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // userinfo
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            ("GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET / HTTP/1.1\nHost: a\r\n\r\n", 400),  // bare LF
            ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),  // bare CR
            ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),  // obs-fold
            ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),  // space before colon
            ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\u{01}\r\n\r\n", 400),  // control character
            ("GET / HTTP/1.1\r\n\r\n", 400),  // no Host
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),  // two Hosts
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),  // smuggling
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),  // differing
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n", 413),  // over the body limit, refused at the head
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),  // chunked twice
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 400),
            ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", 415),  // a compressed body
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Encoding: identity, br\r\nTransfer-Encoding: chunked\r\n\r\n", 415),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),  // not hex
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400),  // no CRLF after data
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", 413),  // one chunk over the limit
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + String(repeating: "a", count: 32) + "\r\n21\r\n", 413),  // total over
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400),  // overflow
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1" + String(repeating: " ", count: 40) + "\r\n", 400),  // long size line
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\nx", 400),  // bare LF in chunk line
            ("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n", 400),  // only blank lines
        ])
    func refused(_ text: String, status: Int) {
        let events = Self.eventsAtEverySplit(text)
        #expect(Self.failure(events)?.status == status, "\(text.debugDescription): \(events)")
        #expect(Self.requests(events).isEmpty)
    }

    @Test("a head over the header limit is 431, found without waiting for its end; so are too many fields")
    func headerLimits() {
        let long = "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "a", count: 300)
        #expect(Self.failure(Self.events([Array(long.utf8)]))?.status == 431)
        #expect(Self.failure(Self.eventsAtEverySplit(long + "\r\n\r\n"))?.status == 431)
        let many = "GET / HTTP/1.1\r\nHost: a\r\n" + (0..<8).map { "F\($0): v\r\n" }.joined() + "\r\n"
        #expect(Self.failure(Self.eventsAtEverySplit(many))?.status == 431)
        let trailer = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "b", count: 300) + "\r\n\r\n"
        #expect(Self.failure(Self.eventsAtEverySplit(trailer))?.status == 431)
    }

    @Test("after a failure the parser accepts nothing more")
    func failureIsFinal() {
        var parser = RequestParser(limits: Self.limits)
        parser.append(Array("GET / HTTP/1.1\nHost: a\r\n\r\n".utf8))
        guard case .failure = parser.next() else {
            Issue.record("expected a failure")
            return
        }
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        guard case .failure = parser.next() else {
            Issue.record("expected the failure to stay")
            return
        }
    }

    @Test("idle and partial states: what the socket loop's timeouts depend on")
    func partialState() {
        var parser = RequestParser(limits: Self.limits)
        #expect(!parser.hasPartialRequest)
        parser.append(Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\no".utf8))
        guard case .head = parser.next() else {
            Issue.record("expected the head")
            return
        }
        #expect(parser.isReadingBody)
        #expect(parser.next() == .needMore)
        parser.append(Array("kG".utf8))
        guard case .request = parser.next() else {
            Issue.record("expected the request")
            return
        }
        #expect(parser.hasPartialRequest)  // the pipelined "G"
        #expect(parser.next() == .needMore)
    }

    @Test("the access log keeps query names, drops their values")
    func redaction() {
        #expect(AccessLog.redacted("/customers?originalTransactionId=123&at=99") == "/customers?originalTransactionId=&at=")
        #expect(AccessLog.redacted("/health") == "/health")
    }

    @Test("listen addresses: IPv4, IPv6, localhost; loopback or not")
    func addresses() {
        #expect(ListenAddress(parsing: "127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(ListenAddress(parsing: "[::1]:0")?.isLoopback == true)
        #expect(ListenAddress(parsing: "localhost:80")?.isLoopback == true)
        #expect(ListenAddress(parsing: "0.0.0.0:80")?.isLoopback == false)
        #expect(ListenAddress(parsing: "10.0.0.1:80")?.isLoopback == false)
        #expect(ListenAddress(parsing: "example.com:80") == nil)
        #expect(ListenAddress(parsing: "127.0.0.1") == nil)
        #expect(ListenAddress(parsing: "127.0.0.1:70000") == nil)
        #expect(ListenAddress.isLoopback("::ffff:127.0.0.1"))
    }

    @Test("a token's bytes are RFC 9110's tchar: letters, digits and !#$%&'*+-.^_`|~, nothing else")
    func tokenBytes() {
        let symbols = Set("!#$%&'*+-.^_`|~".utf8)
        for byte in UInt8.min...UInt8.max {
            let isAlphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            #expect(RequestParser.isTokenByte(byte) == (isAlphanumeric || symbols.contains(byte)), "byte \(byte)")
        }
        // A field name with a symbol a token allows is read; one with a separator is refused.
        let dashed = Self.events([Array("GET / HTTP/1.1\r\nHost: a\r\nX-Trace_Id: 1\r\n\r\n".utf8)])
        guard case .head(let head)? = dashed.first else {
            Issue.record("a field name with - and _ was refused: \(dashed)")
            return
        }
        #expect(head.field("x-trace_id") == "1")
        let separated = Self.events([Array("GET / HTTP/1.1\r\nHost: a\r\nX(Trace): 1\r\n\r\n".utf8)])
        guard case .failure(let error)? = separated.last else {
            Issue.record("a field name with ( was read")
            return
        }
        #expect(error.status == 400)
    }
}
