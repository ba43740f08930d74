import EntitlementCore
import Foundation

/// The figures of a run: a table for people, JSON for tools.
final class Report {
    struct Row {
        var stage: String
        var figure: String
        var value: String
        var target: String
        var met: Bool?
    }

    var rows: [Row] = []
    var sections = JSONObject()
    var targets: [JSONValue] = []
    var failures: [String] = []
    var skipped: [String] = []

    func row(_ stage: String, _ figure: String, _ value: String, target: String = "", met: Bool? = nil) {
        rows.append(Row(stage: stage, figure: figure, value: value, target: target, met: met))
        if let met {
            targets.append(["stage": .string(stage), "figure": .string(figure), "value": .string(value), "target": .string(target), "met": .bool(met)])
        }
    }

    func section(_ name: String, _ value: JSONValue) { sections[name] = value }

    /// The table, in Markdown (it reads as plain text too).
    func table() -> String {
        let header = ["stage", "figure", "value", "target", "met"]
        let cells = rows.map { [$0.stage, $0.figure, $0.value, $0.target, $0.met.map { $0 ? "yes" : "NO" } ?? ""] }
        var widths = header.map(\.count)
        for row in cells { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ row: [String]) -> String {
            "| " + row.enumerated().map { i, cell in
                i == 2 ? String(repeating: " ", count: widths[i] - cell.count) + cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: " | ") + " |"
        }
        var out = [line(header), "| " + widths.enumerated().map { i, w in i == 2 ? String(repeating: "-", count: w - 1) + ":" : String(repeating: "-", count: w) }.joined(separator: " | ") + " |"]
        out += cells.map(line)
        return out.joined(separator: "\n")
    }

    func json() -> JSONValue {
        var object = sections
        object["targets"] = .array(targets)
        object["failures"] = .array(failures.map(JSONValue.string))
        object["skipped"] = .array(skipped.map(JSONValue.string))
        return .object(object)
    }
}

/// Number formatting for the table.
enum Format {
    /// `12,345` style, rounded.
    static func count(_ value: Double) -> String {
        let rounded = Int64(value.rounded())
        let digits = String(abs(rounded))
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(character)
        }
        return (rounded < 0 ? "-" : "") + out
    }

    static func fixed(_ value: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = String(rounded)
        if let dot = text.firstIndex(of: ".") {
            let have = text.distance(from: dot, to: text.endIndex) - 1
            if have < decimals { text += String(repeating: "0", count: decimals - have) }
            if decimals == 0 { text = String(text[..<dot]) }
        } else if decimals > 0 {
            text += "." + String(repeating: "0", count: decimals)
        }
        return text
    }

    static func megabytes(_ bytes: Int64) -> String { fixed(Double(bytes) / 1_048_576, 1) + " MiB" }
}

/// Indented JSON (the engine's writer prints one line).
enum PrettyJSON {
    static func string(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .object(let object):
            if object.isEmpty { return "{}" }
            let members = object.members.map { inner + JSONWriter.string(.string($0.key)) + ": " + string($0.value, indent: inner) }
            return "{\n" + members.joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let array):
            if array.isEmpty { return "[]" }
            if array.allSatisfy({ if case .object = $0 { return false }; if case .array = $0 { return false }; return true }) {
                return "[" + array.map { JSONWriter.string($0) }.joined(separator: ", ") + "]"
            }
            return "[\n" + array.map { inner + string($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .double(let number):
            return number.isFinite ? Format.fixed(number, 3) : "null"
        default:
            return JSONWriter.string(value)
        }
    }
}
