/// One header field as received: the name keeps its spelling, compare it case-insensitively.
public struct HTTPField: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// How a request's body is delimited (RFC 9112 section 6).
public enum BodyFraming: Sendable, Hashable {
    /// No body.
    case none
    /// `Content-Length: n`.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
}

/// A request line and its header fields, validated.
public struct RequestHead: Sendable, Hashable {
    /// The method token, as sent (methods are case-sensitive).
    public var method: String
    /// The request target in origin form (`/path?query`): as sent, or the path and query of
    /// an absolute-form target (`http://host/path?query`).
    public var target: String
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    public var minorVersion: Int
    public var fields: [HTTPField]
    public var framing: BodyFraming
    /// Whether the connection may carry another request after this one.
    public var keepAlive: Bool
    /// `Expect: 100-continue`: the client waits for an interim answer before sending the body.
    public var expectsContinue: Bool

    /// The target's path, before any `?`.
    public var path: Substring {
        if let mark = queryMark { return target[..<mark] }
        return target[...]
    }

    /// The target's query, after the first `?` (`nil` without one).
    public var query: Substring? {
        guard let mark = queryMark else { return nil }
        return target[target.utf8.index(after: mark)...]
    }

    /// Where the first `?` of the target is (an ASCII byte: a boundary of the string's characters too).
    private var queryMark: String.Index? {
        target.utf8.firstIndex(of: UInt8(ascii: "?"))
    }

    /// The first field named `name` (case-insensitive).
    public func field(_ name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    /// Every field named `name` (case-insensitive), in order.
    public func fields(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Whether two field names are the same name: equal but for the case of ASCII letters
    /// (field names are tokens, ASCII alone), compared without copying either.
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        for (x, y) in zip(a.utf8, b.utf8) where x != y {
            // ASCII letters differ by 0x20 between cases.
            guard x | 0x20 == y | 0x20, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(x | 0x20) else {
                return a.lowercased() == b.lowercased()
            }
        }
        return true
    }
}

/// A complete request: its head and its whole (bounded) body.
public struct ServerRequest: Sendable, Hashable {
    public var head: RequestHead
    public var body: [UInt8]

    public init(head: RequestHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }
}
