import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation

/// Ingest end to end through ``Engine/ingest(batches:workers:receivedAt:deliver:)``: the notification
/// bodies in batches, each batch verified (on `workers` threads), appended and
/// projected in one transaction, into a fresh database.
enum IngestBench {
    struct Run {
        var workers: Int
        var notifications: Int
        var seconds: Double
        var cpuSeconds: Double
        var systemSeconds: Double = 0
        var rate: Double { Double(notifications) / seconds }
    }

    static func run(_ corpus: Corpus, documents: [InputBytes], workers: Int, batch: Int, path: String) throws -> Run {
        Storage.remove(path)
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        let receivedAt = TestPayloads_january2026
        var appended = 0
        let cpu = Clock.processCPU()
        let start = Clock.now()
        var index = 0
        // With 2 workers the next batch is verified while the previous one is appended.
        try engine.ingest(
            batches: {
                guard index < documents.count else { return nil }
                let end = min(index + batch, documents.count)
                defer { index = end }
                return Array(documents[index..<end])
            }, workers: workers, receivedAt: receivedAt,
            deliver: { results in for result in results where result.outcome == .appended { appended += 1 } })
        let seconds = Clock.now() - start
        let cpuSeconds = Clock.processCPU() - cpu
        guard appended == documents.count else {
            throw BenchFailure("ingest with \(workers) worker(s) appended \(appended) of \(documents.count) notifications")
        }
        return Run(workers: workers, notifications: documents.count, seconds: seconds, cpuSeconds: cpuSeconds)
    }

    /// The store's share alone: the same batches verified beforehand, then only
    /// ``EventStore/append(_:rules:rulesJSON:receivedAt:)`` timed.
    static func appendOnly(_ corpus: Corpus, documents: [InputBytes], batch: Int, path: String) throws -> Run {
        Storage.remove(path)
        let verifier = try DocumentVerifier(configuration: corpus.configuration)
        var batches: [[AppendItem]] = []
        var index = 0
        while index < documents.count {
            let end = min(index + batch, documents.count)
            batches.append(documents[index..<end].flatMap { verifier.verifiedItems($0) })
            index = end
        }
        let store = try EventStore(path: path, hash: { SHA256.hash($0) })
        let rulesJSON = BenchRules.rulesJSON
        var appended = 0
        let cpu = Clock.processUserSystem()
        let start = Clock.now()
        for items in batches {
            for outcome in try store.append(items, rules: BenchRules.rules, rulesJSON: rulesJSON, receivedAt: TestPayloads_january2026) {
                if case .appended = outcome { appended += 1 }
            }
        }
        let seconds = Clock.now() - start
        guard appended == documents.count else { throw BenchFailure("append-only run appended \(appended) of \(documents.count)") }
        let end = Clock.processUserSystem()
        return Run(
            workers: 1, notifications: documents.count, seconds: seconds,
            cpuSeconds: end.user - cpu.user + end.system - cpu.system, systemSeconds: end.system - cpu.system)
    }
}

/// 2026-01-01T00:00:00Z: the receipt time the benchmark records.
let TestPayloads_january2026: Int64 = 1_767_225_600_000
