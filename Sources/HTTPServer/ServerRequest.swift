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
    /// The request target in origin form (`/path?query`), as sent.
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
        if let mark = target.firstIndex(of: "?") { return target[..<mark] }
        return target[...]
    }

    /// The target's query, after the first `?` (`nil` without one).
    public var query: Substring? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        return target[target.index(after: mark)...]
    }

    /// The first field named `name` (case-insensitive).
    public func field(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every field named `name` (case-insensitive), in order.
    public func fields(_ name: String) -> [String] {
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
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
