/// One item of a batch to append to the log: a verified input, or a rejected one to quarantine.
public enum AppendItem: Sendable {
    /// A verified input, to append to the log.
    case verified(VerifiedInput)
    /// A rejected input, to quarantine.
    case rejected(Rejection)

    /// Whether the item is a rejection.
    public var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}

/// A rejected input and why.
public struct Rejection: Sendable, Hashable {
    public var code: String
    public var message: String
    /// The input as received (possibly cut to the size limit).
    public var raw: [UInt8]
    /// The size of the whole input in bytes.
    public var size: Int
    /// Whether the input is data Apple signed: its signatures verified against a trusted
    /// root, and it was rejected only for the app or environment it names
    /// (`INVALID_APP_IDENTIFIER`, `INVALID_ENVIRONMENT`). Nobody but Apple can make such an
    /// input, so bounds meant for junk do not apply to it.
    public var isSignedByApple: Bool

    public init(code: String, message: String, raw: [UInt8], size: Int? = nil, isSignedByApple: Bool = false) {
        self.code = code
        self.message = message
        self.raw = raw
        self.size = size ?? raw.count
        self.isSignedByApple = isSignedByApple
    }
}
