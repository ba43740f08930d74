import EntitlementCore
#if canImport(Glibc)
import Glibc
#endif

/// Writing to standard output and standard error.
enum Output {
    /// Prints one JSON value as a line.
    static func line(_ value: JSONValue) {
        var text = JSONWriter.string(value)
        text += "\n"
        fputs(text, stdout)
    }

    static func flush() { fflush(stdout) }

    static func error(_ text: String) {
        fputs(text + "\n", stderr)
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Indented JSON, for people.
    static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .array(let elements) where !elements.isEmpty:
            return "[\n" + elements.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let object) where !object.isEmpty:
            return "{\n"
                + object.members.map { member in
                    var key = ""
                    JSONWriter.writeString(member.key, into: &key)
                    return inner + key + ": " + pretty(member.value, indent: inner)
                }.joined(separator: ",\n") + "\n" + indent + "}"
        default:
            return JSONWriter.string(value)
        }
    }
}
