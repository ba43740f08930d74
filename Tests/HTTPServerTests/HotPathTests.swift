import Testing

@testable import HTTPServer

/// What every request passes through, pinned where it was made cheaper: the target's
/// path and query, field names compared without case, the answer's bytes, the access log.
@Suite("HTTP hot path")
struct HotPathTests {
    static func head(_ target: String, fields: [HTTPField] = []) -> RequestHead {
        RequestHead(method: "GET", target: target, minorVersion: 1, fields: fields, framing: .none, keepAlive: true, expectsContinue: false)
    }

    @Test("every status the servers answer has its reason phrase")
    func reasonPhrases() {
        for status in [100, 200, 400, 401, 403, 404, 405, 408, 409, 411, 413, 417, 431, 500, 501, 502, 503, 505] {
            #expect(ServerResponse.reason(status) != "Status", "\(status)")
        }
        #expect(ServerResponse.reason(403) == "Forbidden")
        #expect(ServerResponse.reason(409) == "Conflict")
        #expect(ServerResponse.reason(502) == "Bad Gateway")
    }

    @Test("path and query split at the first ?")
    func pathAndQuery() {
        #expect(Self.head("/customers/704").path == "/customers/704")
        #expect(Self.head("/customers/704").query == nil)
        #expect(Self.head("/customers?otid=1&at=2").path == "/customers")
        #expect(Self.head("/customers?otid=1&at=2").query == "otid=1&at=2")
        #expect(Self.head("/a?b?c").path == "/a")
        #expect(Self.head("/a?b?c").query == "b?c")
        #expect(Self.head("/a?").query == "")
        #expect(Self.head("*").path == "*")
    }

    @Test("field names match whatever the case of their ASCII letters, and nothing else")
    func fieldNames() {
        let head = Self.head(
            "/", fields: [HTTPField(name: "Content-Length", value: "1"), HTTPField(name: "X-Forwarded-For", value: "a"), HTTPField(name: "x-FORWARDED-for", value: "b")])
        #expect(head.field("content-length") == "1")
        #expect(head.field("CONTENT-LENGTH") == "1")
        #expect(head.fields("x-forwarded-for") == ["a", "b"])
        #expect(head.field("content-lengt") == nil)
        #expect(head.field("content_length") == nil)
        // `@` and `` ` `` differ by the case bit, and are no letters.
        #expect(!RequestHead.sameName("a@b", "a`b"))
        #expect(!RequestHead.sameName("a[b", "a{b"))
        #expect(RequestHead.sameName("Expect", "eXPECT"))
    }

    @Test("an answer on the wire: status line, fields, Content-Length, Connection: close when closing, body")
    func serialized() {
        let response = ServerResponse.json(404, Array(#"{"e":1}"#.utf8))
        #expect(
            String(decoding: response.serialized(close: false), as: UTF8.self)
                == "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"e\":1}")
        #expect(
            String(decoding: ServerResponse(status: 200).serialized(close: true), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test("the access log's numbers and paths")
    func accessLogPieces() {
        for number: Int64 in [0, 7, 10, 1_763_683_200_000, -42, Int64.max, Int64.min] {
            var line: [UInt8] = []
            AccessLog.appendInteger(number, to: &line)
            #expect(String(decoding: line, as: UTF8.self) == String(number))
        }
        #expect(AccessLog.redacted("/customers/704000000000000001") == "/customers/704000000000000001")
        #expect(AccessLog.redacted("/" + String(repeating: "a", count: 300)) == "/" + String(repeating: "a", count: 255))
        #expect(AccessLog.redacted("/customers?at=1") == "/customers?at=")
    }
}
