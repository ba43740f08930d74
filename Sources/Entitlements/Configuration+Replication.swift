import EntitlementCore
import Foundation

/// Replication of the database to another machine (specification section 15): with it, an
/// acknowledgment waits until the commit has reached the replica.
public struct ReplicationConfiguration: Sendable, Hashable {
    /// Litestream's control socket, and how long a batch's acknowledgment waits for it.
    public struct Litestream: Sendable, Hashable {
        /// The Unix socket Litestream listens on (`socket.path` in litestream.yml).
        public var socketPath: String
        /// How long a batch waits for Litestream to confirm that it reached the replica.
        public var timeoutMilliseconds: Int

        public static let defaultTimeoutMilliseconds = 5000

        public init(socketPath: String, timeoutMilliseconds: Int = Litestream.defaultTimeoutMilliseconds) {
            self.socketPath = socketPath
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    public var litestream: Litestream

    public init(litestream: Litestream) { self.litestream = litestream }
}

extension ReplicationConfiguration {
    /// A Unix socket path holds at most this many bytes (`sockaddr_un.sun_path`, without its terminating zero).
    static let maxSocketPathBytes = 107

    /// Reads `"replication": {"litestream": {"socket": PATH, "timeoutMs": N}}`. A relative
    /// socket path resolves against the configuration file's folder.
    /// - Throws: ``ConfigurationError`` naming the field.
    static func parse(_ json: JSONValue, baseDirectory: URL) throws(ConfigurationError) -> ReplicationConfiguration {
        guard case .object(let object) = json else {
            throw ConfigurationError(field: "replication", message: "expected an object such as {\"litestream\": {\"socket\": \"/run/litestream.sock\", \"timeoutMs\": 5000}}, found \(json.typeName)")
        }
        for key in object.keys where key != "litestream" {
            throw ConfigurationError(field: "replication.\(key)", message: "unknown field; expected litestream")
        }
        guard let section = object["litestream"] else {
            throw ConfigurationError(field: "replication.litestream", message: "required: {\"socket\": PATH, \"timeoutMs\": N}, Litestream's control socket")
        }
        guard case .object(let litestream) = section else {
            throw ConfigurationError(field: "replication.litestream", message: "expected an object {\"socket\": PATH, \"timeoutMs\": N}, found \(section.typeName)")
        }
        for key in litestream.keys where key != "socket" && key != "timeoutMs" {
            throw ConfigurationError(field: "replication.litestream.\(key)", message: "unknown field; expected socket, timeoutMs")
        }
        guard case .string(let socket)? = litestream["socket"], !socket.isEmpty else {
            throw ConfigurationError(
                field: "replication.litestream.socket", message: "required: the path of Litestream's control socket (socket.path in litestream.yml), e.g. \"/run/litestream.sock\"")
        }
        // Made absolute before `..` is resolved: standardizing a relative URL drops its leading `..`.
        let path = socket.hasPrefix("/") ? socket : baseDirectory.appendingPathComponent(socket).absoluteURL.standardized.path
        guard path.utf8.count <= maxSocketPathBytes else {
            throw ConfigurationError(
                field: "replication.litestream.socket", message: "\(path) is longer than a Unix socket path may be (\(maxSocketPathBytes) bytes)")
        }
        var timeout = Litestream.defaultTimeoutMilliseconds
        switch litestream["timeoutMs"] {
        case nil: break
        case .int(let value)? where value >= 1 && value <= 600_000: timeout = Int(value)
        case let other?:
            throw ConfigurationError(field: "replication.litestream.timeoutMs", message: "expected an integer from 1 to 600000 (milliseconds), found \(JSONWriter.string(other))")
        }
        return ReplicationConfiguration(litestream: Litestream(socketPath: path, timeoutMilliseconds: timeout))
    }
}
