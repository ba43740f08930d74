import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

/// What replicated acknowledgments cost, with a real Litestream and a file replica on
/// the same disk: the latency of a one-notification batch (p50, p99) and the ingest
/// rate of the command line, each with and without replication, printed for
/// `docs/replication.md`. It checks only that both modes work; the figures are the point.
@Suite("Replication latency", .serialized)
struct ReplicationLatencyTests {
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    @Test("one-notification batches and a 2,000-line ingest, with and without replicated acknowledgments", .enabled(if: Litestream.available))
    func latencyAndRate() throws {
        let batches = parameter("REPLICATION_BENCH_BATCHES", 200)
        let lines = parameter("REPLICATION_BENCH_LINES", 2_000)
        let workspace = try Workspace(name: "replication-bench")
        let plain = Tool.read(workspace.configPath)
        let history = History.generate(lines: max(lines, batches), seed: 0xBE4C)
        let texts = history.lines.map(\.text)

        // Batch latency through the library: one document per batch, back to back.
        let litestream = try Litestream(database: workspace.path("replicated.sqlite"), in: workspace.folder)
        try workspace.addReplication(litestream.replicationSection(timeoutMs: 30_000))
        var unreplicatedConfiguration = try workspace.configuration()
        unreplicatedConfiguration.replication = nil
        var report: [String] = []
        do {
            let replicated = try workspace.engine("replicated.sqlite")
            try litestream.start()
            defer { litestream.stop() }
            let local = try Engine(configuration: unreplicatedConfiguration, databasePath: workspace.path("local.sqlite"))
            for (name, engine) in [("local", local), ("replicated", replicated)] {
                var samples: [Double] = []
                let clock = ContinuousClock()
                let started = clock.now
                for text in texts.prefix(batches) {
                    let begin = clock.now
                    _ = try engine.ingest([InputBytes(text)])
                    samples.append(Self.milliseconds(begin.duration(to: clock.now)))
                }
                let seconds = Self.milliseconds(started.duration(to: clock.now)) / 1000
                samples.sort()
                report.append(
                    String(
                        format: "%@: %d one-line batches, p50 %.2f ms, p99 %.2f ms, max %.2f ms (%.0f batches/s), %d requests to Litestream",
                        name, samples.count, Self.percentile(samples, 0.5), Self.percentile(samples, 0.99), samples.last ?? 0,
                        Double(samples.count) / seconds, engine.replicationRequests))
            }
            #expect(replicated.replicationRequests >= batches)
        }

        // Ingest rate of the command line: the same lines, batches of 512, with and without replication.
        let file = try workspace.write(lines: Array(texts.prefix(lines)), to: "bench.ndjson")
        let empty = try workspace.write(lines: [], to: "empty.ndjson")
        _ = try workspace.cli("ingest", db: "cli-replicated.sqlite", [empty.path])
        try FileManager.default.createDirectory(at: workspace.url("cli"), withIntermediateDirectories: true)
        let cliLitestream = try Litestream(database: workspace.path("cli-replicated.sqlite"), in: workspace.url("cli"))
        try cliLitestream.start()
        defer { cliLitestream.stop() }
        try Data(plain).write(to: workspace.configURL)
        try workspace.addReplication(cliLitestream.replicationSection(timeoutMs: 30_000))
        let replicatedRun = try workspace.cli("ingest", db: "cli-replicated.sqlite", [file.path])
        try Data(plain).write(to: workspace.configURL)
        let localRun = try workspace.cli("ingest", db: "cli-local.sqlite", [file.path])
        #expect(replicatedRun.status == 1 && localRun.status == 1, "\(replicatedRun.stderr) \(localRun.stderr)")
        for (name, run) in [("local", localRun), ("replicated", replicatedRun)] {
            report.append(String(format: "ingest %@: %d lines in %.2f s, %.0f lines/s", name, lines, run.seconds, Double(lines) / run.seconds))
        }
        print("replication benchmark:\n  " + report.joined(separator: "\n  "))
    }
}
