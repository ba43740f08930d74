internal import EventStore

/// Why the engine could not start or finish a command.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: StoreError) {
        self.init(code: error.code.rawValue, message: error.message)
    }

    public var description: String { "\(code): \(message)" }
}
