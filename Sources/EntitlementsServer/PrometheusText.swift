/// Prometheus's text exposition format (version 0.0.4): families with `# HELP` and
/// `# TYPE`, then their samples, label values escaped.
struct PrometheusText {
    private(set) var text = ""

    /// The content type of the exposition.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Starts a family.
    mutating func family(_ name: String, type: String, help: String) {
        text += "# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) \(type)\n"
    }

    /// One sample.
    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapedLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.number(value) + "\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Int64) {
        sample(name, labels, Double(value))
    }

    static func number(_ value: Double) -> String {
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value.isNaN { return "NaN" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escapedLabel(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// A help text: backslash and line feed escaped.
    static func escapedHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
