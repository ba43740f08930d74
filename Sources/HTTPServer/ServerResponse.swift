/// An answer: status, header fields and a body sent with `Content-Length`.
public struct ServerResponse: Sendable {
    public var status: Int
    public var fields: [HTTPField]
    public var body: [UInt8]
    /// Close the connection after this answer (the body of the request may be unread).
    public var closesConnection: Bool

    public init(status: Int, fields: [HTTPField] = [], body: [UInt8] = [], closesConnection: Bool = false) {
        self.status = status
        self.fields = fields
        self.body = body
        self.closesConnection = closesConnection
    }

    /// A JSON answer (`application/json`).
    public static func json(_ status: Int, _ body: [UInt8], closesConnection: Bool = false) -> ServerResponse {
        ServerResponse(
            status: status, fields: [HTTPField(name: "Content-Type", value: "application/json")], body: body,
            closesConnection: closesConnection)
    }

    /// A JSON error answer `{"error":{"code":...,"message":...}}`.
    public static func error(_ status: Int, code: String, message: String, closesConnection: Bool = false) -> ServerResponse {
        var body = Array(#"{"error":{"code":"#.utf8)
        appendJSONString(code, to: &body)
        body += Array(#","message":"#.utf8)
        appendJSONString(message, to: &body)
        body += Array("}}".utf8)
        return .json(status, body, closesConnection: closesConnection)
    }

    /// The bytes on the wire, head and body (without the body, its `Content-Length` kept,
    /// for a HEAD request).
    public func serialized(close: Bool, withBody: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + body.count)
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        AccessLog.appendInteger(Int64(status), to: &out)
        out.append(0x20)
        out.append(contentsOf: Self.reason(status).utf8)
        out.append(contentsOf: [0x0D, 0x0A])
        for field in fields {
            out.append(contentsOf: field.name.utf8)
            out.append(contentsOf: [0x3A, 0x20])
            out.append(contentsOf: field.value.utf8)
            out.append(contentsOf: [0x0D, 0x0A])
        }
        out.append(contentsOf: "Content-Length: ".utf8)
        AccessLog.appendInteger(Int64(body.count), to: &out)
        out.append(contentsOf: [0x0D, 0x0A])
        if close { out.append(contentsOf: "Connection: close\r\n".utf8) }
        out.append(contentsOf: [0x0D, 0x0A])
        if withBody { out.append(contentsOf: body) }
        return out
    }

    /// The reason phrase of a status code.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }

    /// Appends `text` as a JSON string literal.
    static func appendJSONString(_ text: String, to out: inout [UInt8]) {
        out.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, 0x6E]
            case 0x0D: out += [0x5C, 0x72]
            case 0x09: out += [0x5C, 0x74]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }
}
