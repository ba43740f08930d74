/// The bounds a server keeps per connection and in total.
public struct ServerLimits: Sendable {
    /// Connections served at once; more wait in the listen backlog.
    public var maxConnections: Int
    /// A connection that sends nothing for this long is closed (between requests, or in the middle of one).
    public var idleTimeoutMilliseconds: Int
    /// The whole head of a request (request line and fields) must arrive within this time of its first byte.
    public var headerTimeoutMilliseconds: Int
    /// The whole body of a request must arrive within this time of its head.
    public var bodyTimeoutMilliseconds: Int
    /// An answer the client does not read within this time is abandoned with its connection.
    public var writeTimeoutMilliseconds: Int
    /// The listen backlog.
    public var backlog: Int32
    /// Sizes: head, fields, body, chunk lines.
    public var parser: ParserLimits

    public init(
        maxBodyBytes: Int, maxConnections: Int = 256, idleTimeoutMilliseconds: Int = 10_000, headerTimeoutMilliseconds: Int = 10_000,
        bodyTimeoutMilliseconds: Int = 60_000, writeTimeoutMilliseconds: Int = 10_000, backlog: Int32 = 1024
    ) {
        self.maxConnections = maxConnections
        self.idleTimeoutMilliseconds = idleTimeoutMilliseconds
        self.headerTimeoutMilliseconds = headerTimeoutMilliseconds
        self.bodyTimeoutMilliseconds = bodyTimeoutMilliseconds
        self.writeTimeoutMilliseconds = writeTimeoutMilliseconds
        self.backlog = backlog
        self.parser = ParserLimits(maxBodyBytes: maxBodyBytes)
    }
}

/// Who sent a request.
public struct ClientInfo: Sendable, Hashable {
    /// The socket peer's numeric address.
    public var peer: String
    public var peerIsLoopback: Bool

    public init(peer: String) {
        self.peer = peer
        self.peerIsLoopback = ListenAddress.isLoopback(peer)
    }
}

/// Why a server could not start.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String
    public var description: String { "\(code): \(message)" }

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}
