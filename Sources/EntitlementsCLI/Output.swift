import EntitlementCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing to standard output and standard error.
enum Output {
    /// Prints one JSON value as a line (written at once: nothing waits in a buffer).
    static func line(_ value: JSONValue) {
        var text = JSONWriter.string(value)
        text += "\n"
        write(text, to: 1)
    }

    /// Prints several JSON values, one per line, in one write.
    static func lines(_ values: [JSONValue]) {
        var bytes: [UInt8] = []
        for value in values {
            JSONWriter.write(value, into: &bytes)
            bytes.append(0x0A)
        }
        write(bytes, to: 1)
    }

    static func error(_ text: String) {
        write(text + "\n", to: 2)
    }

    /// Text without a trailing newline, to standard error.
    static func errorFragment(_ text: String) {
        write(text, to: 2)
    }

    static func write(_ text: String, to fd: Int32) {
        write(Array(text.utf8), to: fd)
    }

    static func write(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count > 0 else { return }
            var offset = 0
            while offset < buffer.count {
                #if canImport(Darwin)
                let written = Darwin.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #else
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                #endif
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
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
