/// The bounds a server keeps per connection and in total.
///
/// The limits and their defaults:
/// - `maxConnections` (256): connections served at once.
/// - `maxConnectionsPerClient` (64): connections one client address may hold.
/// - A connection accepted while its client address or the server is at a bound first sheds
///   an idle connection (one with no request under way: before its first request or between
///   requests, oldest idle first; at the per-client bound only that client's own). A connection
///   with part of a request received is never shed. With nothing to shed, the new connection is
///   answered `503` with `Retry-After` (`retryAfterSeconds`, 5) as soon as it is accepted,
///   before any of its request is read, and closed: nothing waits in the listen backlog, and
///   nothing waits for a request to arrive.
/// - `idleTimeoutMilliseconds` (10 s) with no byte received closes a connection;
///   `headerTimeoutMilliseconds` (10 s) for a whole head; `bodyTimeoutMilliseconds` (60 s)
///   for a whole body; `writeTimeoutMilliseconds` (10 s) for the client to read an answer.
/// - `shutdownGraceMilliseconds` (5 s): after a stop, idle connections close at once, a request
///   being received has this long to arrive whole (else `503` and close), complete requests are
///   answered, and no answer is written for longer than this past it.
/// - When the process is out of file descriptors, accepting pauses (10 ms, doubling up to 1 s)
///   and the oldest idle connection is shed.
/// - Sizes: ``ParserLimits`` (head 16 KiB, 100 fields, the body `maxBodyBytes`).
///
/// `serve` takes `serve.maxConnections` and `serve.maxConnectionsPerClient` from its configuration.
public struct ServerLimits: Sendable {
    /// Connections served at once; past it, idle ones are shed, else a new connection gets `503` at once.
    public var maxConnections: Int
    /// Connections one client address (the socket's peer) may hold at once; past it, that client's idle
    /// ones are shed, else its new connection gets `503` at once.
    /// Behind a reverse proxy every connection has the proxy's address: raise it to `maxConnections` there.
    public var maxConnectionsPerClient: Int
    /// The `Retry-After` of a `503` for a connection over a bound.
    public var retryAfterSeconds: Int
    /// A connection that sends nothing for this long is closed (between requests, or in the middle of one).
    public var idleTimeoutMilliseconds: Int
    /// The whole head of a request (request line and fields) must arrive within this time of its first byte.
    public var headerTimeoutMilliseconds: Int
    /// The whole body of a request must arrive within this time of its head.
    public var bodyTimeoutMilliseconds: Int
    /// An answer the client does not read within this time is abandoned with its connection.
    public var writeTimeoutMilliseconds: Int
    /// After a stop, how long a request being received may take to arrive whole (and an answer to be written).
    public var shutdownGraceMilliseconds: Int
    /// The listen backlog.
    public var backlog: Int32
    /// Sizes: head, fields, body, chunk lines.
    public var parser: ParserLimits

    public init(
        maxBodyBytes: Int, maxConnections: Int = 256, maxConnectionsPerClient: Int = 64,
        retryAfterSeconds: Int = 5, idleTimeoutMilliseconds: Int = 10_000, headerTimeoutMilliseconds: Int = 10_000,
        bodyTimeoutMilliseconds: Int = 60_000, writeTimeoutMilliseconds: Int = 10_000, shutdownGraceMilliseconds: Int = 5_000,
        backlog: Int32 = 1024
    ) {
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.retryAfterSeconds = retryAfterSeconds
        self.idleTimeoutMilliseconds = idleTimeoutMilliseconds
        self.headerTimeoutMilliseconds = headerTimeoutMilliseconds
        self.bodyTimeoutMilliseconds = bodyTimeoutMilliseconds
        self.writeTimeoutMilliseconds = writeTimeoutMilliseconds
        self.shutdownGraceMilliseconds = shutdownGraceMilliseconds
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
/// Why a server could not start: a ``Code`` a program can match and a message a person can act on.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure it is. New codes may be added (the embedding server adds its own).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.init(rawValue: value) }
        public var description: String { rawValue }

        /// The address cannot be bound: in use, not local, or not permitted.
        public static let listenFailed: Code = "LISTEN_FAILED"
    }

    public var code: Code
    public var message: String
    public var description: String { "\(code): \(message)" }

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}
