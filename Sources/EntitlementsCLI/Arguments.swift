import Entitlements

/// A usage error: exit code 2, with what was expected.
struct UsageError: Error {
    var message: String
    var command: String?
}

/// The flags of one command, parsed strictly: unknown flags and missing values are usage errors.
struct Arguments {
    var values: [String: String] = [:]
    /// Every value of each valued flag, in order, for flags that may repeat (`values` keeps the last).
    var repeated: [String: [String]] = [:]
    var flags: Set<String> = []
    var positional: [String] = []
    /// The valued flags that may be given more than once (each value kept in ``repeated``).
    static let repeatable: Set<String> = ["--storefront"]
    /// The valued flags that name a file: an empty value is a mistake to say (`--db ""`
    /// from an unset shell variable), not a path to try. (An empty `--config` is said
    /// where the configuration is read, for every command that reads one.)
    static let paths: Set<String> = ["--db"]

    /// - Parameters:
    ///   - valued: flags that take a value (`--db PATH`).
    ///   - switches: flags that take none (`--diff`).
    init(_ arguments: ArraySlice<String>, command: String, valued: Set<String>, switches: Set<String>) throws(UsageError) {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positional.append(contentsOf: arguments[index...])
                break
            }
            if argument.hasPrefix("--") {
                var name = argument
                var inline: String? = nil
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    inline = String(argument[argument.index(after: equals)...])
                }
                if valued.contains(name) {
                    // Given twice, a flag that takes one value is a mistake to say, not to settle
                    // silently (`link --app-user-id a --app-user-id b`).
                    if values[name] != nil, !Self.repeatable.contains(name) {
                        throw UsageError(message: "\(name) is given more than once", command: command)
                    }
                    if let inline {
                        values[name] = inline
                        repeated[name, default: []].append(inline)
                    } else {
                        guard index < arguments.endIndex, !arguments[index].hasPrefix("--") else {
                            throw UsageError(message: "\(name) needs a value", command: command)
                        }
                        values[name] = arguments[index]
                        repeated[name, default: []].append(arguments[index])
                        index += 1
                    }
                    if Self.paths.contains(name), values[name] == "" {
                        throw UsageError(message: "\(name) needs a path, got an empty one", command: command)
                    }
                } else if switches.contains(name) {
                    guard inline == nil else { throw UsageError(message: "\(name) takes no value", command: command) }
                    flags.insert(name)
                } else {
                    let known = (valued.map { $0 + " VALUE" } + switches.sorted()).sorted().joined(separator: ", ")
                    throw UsageError(message: "unknown option \(name) (expected: \(known))", command: command)
                }
            } else if argument.hasPrefix("-") && argument != "-" {
                throw UsageError(message: "unknown option \(argument)", command: command)
            } else {
                positional.append(argument)
            }
        }
    }

    /// A moment (`--at`, `--until`, `--start`): integer milliseconds or ISO 8601 UTC, parsed by
    /// the library's one ``TimeArgument`` (an integer below 100000000000 is refused: seconds?).
    func time(_ name: String, command: String) throws(UsageError) -> Int64? {
        guard let text = values[name] else { return nil }
        do {
            return try TimeArgument.parse(text)
        } catch {
            throw UsageError(message: "\(name) \(error.message)", command: command)
        }
    }

    func integer(_ name: String) throws(UsageError) -> Int64? {
        guard let text = values[name] else { return nil }
        return try Self.wholeNumber(text, flag: name, expects: "expects an integer, got \"\(text)\"", command: nil)
    }

    /// `text` as a whole number of `flag`. What is no whole number is refused with
    /// `flag` and `expects`; a whole number past what 64 bits hold is refused as too
    /// large (or too small), naming `bounds` (the flag's own, when it has narrower ones).
    static func wholeNumber(
        _ text: String, flag: String, expects: String, bounds: ClosedRange<Int64> = Int64.min...Int64.max, command: String?
    ) throws(UsageError) -> Int64 {
        if let value = Int64(text) { return value }
        let digits = text.utf8.drop { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") }
        let sign = text.utf8.count - digits.count
        if sign <= 1, !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) {
            let negative = text.hasPrefix("-")
            throw UsageError(
                message: "\(flag) \(text) is too \(negative ? "small" : "large"): at \(negative ? "least \(bounds.lowerBound)" : "most \(bounds.upperBound)")",
                command: command)
        }
        throw UsageError(message: "\(flag) \(expects)", command: command)
    }
}
