internal import EventStore

/// Why the engine could not start or finish a command: a ``Code`` a program can
/// match and a message a person can act on.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure it is. New codes may be added; match the ones you handle
    /// and treat the rest as failures.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.init(rawValue: value) }
        public var description: String { rawValue }

        /// The configuration is incomplete or contradicts itself.
        public static let configuration: Code = "CONFIGURATION"
        /// The database belongs to another app, or holds the other class of data (signed or unsigned).
        public static let databaseMismatch: Code = "DATABASE_MISMATCH"
        /// A command that only reads found no database file.
        public static let databaseNotFound: Code = "DATABASE_NOT_FOUND"
        /// The database was written by a newer engine.
        public static let databaseTooNew: Code = "DATABASE_TOO_NEW"
        /// Another writer held the database past the busy timeout; retrying is safe.
        public static let databaseBusy: Code = "DATABASE_BUSY"
        /// The HTTP server is stopping and takes no more input.
        public static let shuttingDown: Code = "SHUTTING_DOWN"

        /// Whether the database itself is the problem (unusable, full, damaged, busy, missing
        /// or too new), as opposed to how the engine was asked: the command line exits 3
        /// for these, except ``databaseMismatch``, a configuration problem (exit 2).
        public var isDatabase: Bool { rawValue.hasPrefix("DATABASE") }
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: StoreError) {
        self.init(code: Code(rawValue: error.code.rawValue), message: error.message)
    }

    public var description: String { "\(code): \(message)" }
}
