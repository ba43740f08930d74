import Entitlements
import Foundation

/// Ingest latency while a replay of the whole query/replay database runs on the same
/// engine, as a server would see it: the webhook keeps ingesting while an operator
/// replays after a rule change. Replay reads its own snapshot on its own connection and
/// writes its new generation in short batches, so each ingest waits at most for one batch.
enum ConcurrentBench {
    struct Figures {
        var ingests: Int
        var p50: Double
        var p99: Double
        var max: Double
        var replaySeconds: Double
        var replayEvents: Int64
        var caughtUp: Int64
    }

    /// Milliseconds between two ingests: about what a busy webhook sends.
    static let gapMilliseconds = 5

    final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var started = false
        var finished = false
        var report: ReplayReport?
        var error: Error?
        var replaySeconds = 0.0
        func with<T>(_ body: (Shared) -> T) -> T { lock.lock(); defer { lock.unlock() }; return body(self) }
    }

    /// One ingest (one notification, in its own transaction) every few milliseconds while a
    /// replay runs, each timed from the call to its commit.
    static func measure(path: String, corpus: Corpus) throws -> Figures {
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        let shared = Shared()
        Thread {
            let start = Clock.now()
            do {
                let report = try engine.replay(now: QueryBench.at) { _ in shared.with { $0.started = true } }
                shared.with { $0.report = report }
            } catch {
                shared.with { $0.error = error }
            }
            shared.with {
                $0.replaySeconds = Clock.now() - start
                $0.finished = true
                $0.started = true
            }
        }.start()
        // Ingests begin once the replay reports its first progress (it is reading then).
        while !shared.with({ $0.started }) { usleep(1_000) }
        var latencies: [UInt64] = []
        var index = 0
        while !shared.with({ $0.finished }) {
            let sample = corpus.samples[index % corpus.samples.count]
            index += 1
            let begin = Clock.nanoseconds()
            let results = try engine.ingest([InputBytes(sample.body)])
            latencies.append(Clock.nanoseconds() - begin)
            guard results.allSatisfy({ $0.outcome == .appended || $0.outcome == .duplicate }) else {
                throw BenchFailure("an ingest during the replay was rejected: \(results.map { $0.json() })")
            }
            usleep(UInt32(gapMilliseconds * 1_000))
        }
        if let error = shared.with({ $0.error }) { throw error }
        guard let report = shared.with({ $0.report }) else { throw BenchFailure("the replay reported nothing") }
        guard !latencies.isEmpty else { throw BenchFailure("the replay ended before any ingest") }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.down)))]) / 1e6
        }
        return Figures(
            ingests: latencies.count, p50: percentile(0.5), p99: percentile(0.99), max: Double(latencies.last!) / 1e6,
            replaySeconds: shared.with { $0.replaySeconds }, replayEvents: report.events, caughtUp: report.caughtUp)
    }
}
