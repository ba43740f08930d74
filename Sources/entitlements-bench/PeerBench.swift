import EntitlementCore
import Foundation
import TestPKI

/// The peer: Apple's App Store Server Library for Python, run by
/// `Benchmarks/peer-python.sh` on the same corpus file, in the same run.
enum PeerBench {
    struct Figures {
        var rate: Double
        var notifications: Int
        var seconds: Double
        var cpuSeconds: Double
        var version: String
        var ratePerCPUSecond: Double { cpuSeconds > 0 ? Double(notifications) / cpuSeconds : 0 }
        var details: JSONValue
    }

    enum Outcome {
        case measured(Figures)
        case skipped(String)
    }

    /// Where the script is: `--peer-script`, else `Benchmarks/` under the working
    /// directory or above the executable (`.build/<triple>/<config>/`).
    static func script(_ explicit: String?) -> String? {
        if let explicit { return explicit }
        var candidates = [FileManager.default.currentDirectoryPath + "/Benchmarks/peer-python.sh"]
        var folder = URL(fileURLWithPath: Machine.executablePath).deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(folder.appendingPathComponent("Benchmarks/peer-python.sh").path)
            folder = folder.deletingLastPathComponent()
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) || FileManager.default.fileExists(atPath: $0) }
    }

    static func run(script: String?, corpus: String, root: String, venv: String, limit: Int) -> Outcome {
        guard let script = self.script(script) else {
            return .skipped("Benchmarks/peer-python.sh not found (run from the package folder, or pass --peer-script)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/bin/bash") else { return .skipped("/bin/bash not found") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            script, "--corpus", corpus, "--root", root, "--venv", venv, "--limit", String(limit),
            "--bundle-id", TestPayloads.bundleId, "--app-apple-id", String(TestPayloads.appAppleId),
            "--environment", TestPayloads.environment,
        ]
        let output = Pipe()
        process.standardOutput = output
        do { try process.run() } catch { return .skipped("cannot run \(script): \(error)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 3 { return .skipped("the Python peer cannot run here (see the message above)") }
        guard process.terminationStatus == 0 else {
            return .skipped("the Python peer failed with exit code \(process.terminationStatus)")
        }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard let json = try? JSONParser().parse(line), case .double(let rate)? = json["rate"] else {
            return .skipped("the Python peer printed no result: \(line)")
        }
        var notifications = 0
        if case .int(let n)? = json["notifications"] { notifications = Int(n) }
        var seconds = 0.0
        if case .double(let s)? = json["seconds"] { seconds = s }
        var cpuSeconds = 0.0
        if case .double(let s)? = json["cpuSeconds"] { cpuSeconds = s }
        var version = "?"
        if case .string(let v)? = json["version"] { version = v }
        return .measured(Figures(rate: rate, notifications: notifications, seconds: seconds, cpuSeconds: cpuSeconds, version: version, details: json))
    }
}
