import EntitlementCore
import TestPKI
import Foundation

/// `entitlements ingest` as deployed: the release command line beside this
/// benchmark, on the corpus as an NDJSON file and the same bytes piped into
/// standard input (the long-running process a feeder writes to), into fresh
/// databases. Wall-clock and the children's CPU time (`RUSAGE_CHILDREN`).
enum CLIIngestBench {
    struct Run {
        var source: String
        var workers: Int
        var notifications: Int
        var seconds: Double
        var cpuSeconds: Double
        var rate: Double { Double(notifications) / seconds }
    }

    /// The `entitlements` binary built beside this one, when there is one.
    static var binary: String? {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("entitlements").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Writes a configuration trusting the corpus's root.
    static func writeConfiguration(_ corpus: Corpus, folder: String) throws -> String {
        let rootPath = folder + "/cli-root.pem"
        try Data(corpus.pki.rootPEM.utf8).write(to: URL(fileURLWithPath: rootPath))
        let config: JSONValue = .object(JSONObject([
            ("bundleId", .string(TestPayloads.bundleId)), ("appAppleId", .int(TestPayloads.appAppleId)),
            ("environment", "Sandbox"), ("rootCertificates", [.string(rootPath)]), ("rules", BenchRules.rules.canonicalJSON),
        ]))
        let path = folder + "/cli-config.json"
        try Data(JSONWriter.string(config).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func run(binary: String, corpusPath: String, config: String, notifications: Int, stdin: Bool, workers: Int, database: String) throws -> Run {
        Storage.remove(database)
        let ingest = "'\(binary)' ingest --db '\(database)' --config '\(config)' --workers \(workers)"
        // Through a pipe from another process, as a feeder writes; or the file named.
        let script = stdin ? "cat '\(corpusPath)' | \(ingest) - > /dev/null" : "\(ingest) '\(corpusPath)' > /dev/null"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        let cpu = childrenCPU()
        let start = Clock.now()
        try process.run()
        process.waitUntilExit()
        let seconds = Clock.now() - start
        guard process.terminationStatus == 0 else {
            throw BenchFailure("`\(script)` exited \(process.terminationStatus)")
        }
        let events = try Storage.measure(database, columns: false).events
        guard events == Int64(notifications) else { throw BenchFailure("`\(script)` stored \(events) of \(notifications) notifications") }
        Storage.remove(database)
        return Run(source: stdin ? "standard input" : "file", workers: workers, notifications: notifications, seconds: seconds,
                   cpuSeconds: childrenCPU() - cpu)
    }

    static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(rusageChildren, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }
}
