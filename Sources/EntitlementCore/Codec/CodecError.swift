/// Bytes that ``StateCodec`` or ``EventCodec`` cannot read: truncated,
/// corrupted, or written by a format version this build does not know.
///
/// Decoding never traps on bad input; it throws this, naming the byte offset.
public struct CodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of damage was found. Codes can be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Kind: Sendable, Hashable {
            case truncated, malformedInteger, invalidUTF8, unsupportedVersion, invalidTag, trailingBytes, inconsistent
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The bytes end in the middle of a value.
        public static let truncated = Code(.truncated)
        /// A variable-length integer is too long, not minimal, or out of range.
        public static let malformedInteger = Code(.malformedInteger)
        /// A string is not valid UTF-8.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// The leading format version byte is not one this build reads.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// An enumeration code or flag bit has no meaning.
        public static let invalidTag = Code(.invalidTag)
        /// Bytes remain after a complete value.
        public static let trailingBytes = Code(.trailingBytes)
        /// The values read contradict each other (duplicates, disorder).
        public static let inconsistent = Code(.inconsistent)

        /// A short name of the damage.
        public var description: String {
            switch kind {
            case .truncated: return "truncated"
            case .malformedInteger: return "malformed integer"
            case .invalidUTF8: return "invalid UTF-8"
            case .unsupportedVersion: return "unsupported format version"
            case .invalidTag: return "invalid tag"
            case .trailingBytes: return "trailing bytes"
            case .inconsistent: return "inconsistent"
            }
        }
    }

    /// What kind of damage was found.
    public var code: Code
    /// The byte offset where the problem was found.
    public var offset: Int
    /// What was wrong, for a person.
    public var message: String

    /// An error with exactly these fields.
    public init(code: Code, offset: Int, message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    /// The error in one line: offset, code and message.
    public var description: String { "cannot decode at byte \(offset): \(code): \(message)" }
}
