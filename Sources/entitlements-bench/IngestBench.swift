import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

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

    /// When the benchmark receives the corpus's notifications.
    enum Receipt {
        /// Each batch a second after the latest of its notifications was signed, as Apple
        /// sends them (``HistoryPlan/receivedAt(_:)``): a renewal arrives before the
        /// expiry it moves.
        case live
        /// All of them on 2026-01-01, months after the periods they sign ended: a backlog
        /// received at once, in which every renewal's period has expired by its arrival.
        case backlog

        func receivedAt(_ plan: HistoryPlan, batch: Int, number: Int, count: Int) -> Int64 {
            switch self {
            case .live: plan.receivedAt((number * batch)..<min((number + 1) * batch, count))
            case .backlog: TestPayloads_january2026
            }
        }
    }

    /// - Parameters:
    ///   - lifecycle: whether the engine records the lifecycle feed (off: what the ingest costs without it).
    ///   - receipt: when the notifications are received.
    static func run(
        _ corpus: Corpus, documents: [InputBytes], workers: Int, batch: Int, path: String, lifecycle: Bool = true,
        receipt: Receipt = .backlog
    ) throws -> Run {
        Storage.remove(path)
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        engine.recordsLifecycleForBenchmark = lifecycle
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
            }, workers: workers,
            receivedAtOfBatch: { receipt.receivedAt(corpus.plan, batch: batch, number: $0, count: documents.count) },
            deliver: { results in for result in results where result.outcome == .appended { appended += 1 } })
        let seconds = Clock.now() - start
        let cpuSeconds = Clock.processCPU() - cpu
        guard appended == documents.count else {
            throw BenchFailure("ingest with \(workers) worker(s) appended \(appended) of \(documents.count) notifications")
        }
        return Run(workers: workers, notifications: documents.count, seconds: seconds, cpuSeconds: cpuSeconds)
    }

    /// An embedding server's webhooks: each notification body through the `async`
    /// ``Engine/ingest(_:workers:receivedAt:)-(_,_,_)`` on its own, from `tasks` concurrent
    /// tasks (the engine commits calls made at once together).
    /// - Returns: the run, and the transactions the calls were committed in.
    static func concurrent(_ corpus: Corpus, documents: [InputBytes], tasks: Int, path: String) throws -> (run: Run, transactions: Int) {
        Storage.remove(path)
        defer { Storage.remove(path) }
        let engine = try Engine(configuration: corpus.configuration, databasePath: path)
        let before = engine.groupCommitStatistics
        let cpu = Clock.processCPU()
        let start = Clock.now()
        let appended = try runBlocking { () async throws -> Int in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var count = 0
                        for index in stride(from: task, to: documents.count, by: tasks) {
                            count += try await engine.ingest([documents[index]]).filter { $0.outcome == .appended }.count
                        }
                        return count
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        let seconds = Clock.now() - start
        let cpuSeconds = Clock.processCPU() - cpu
        guard appended == documents.count else {
            throw BenchFailure("concurrent ingest from \(tasks) tasks appended \(appended) of \(documents.count) notifications")
        }
        let run = Run(workers: tasks, notifications: documents.count, seconds: seconds, cpuSeconds: cpuSeconds)
        return (run, engine.groupCommitStatistics.batches - before.batches)
    }

    /// The store's share alone: the same batches verified beforehand, then only
    /// ``EventStore/append(_:rules:rulesJSON:receivedAt:)`` timed.
    /// - Parameters:
    ///   - lifecycle: whether the store records the lifecycle feed (off: what the ingest costs without it).
    ///   - receipt: when the notifications are received.
    static func appendOnly(
        _ corpus: Corpus, documents: [InputBytes], batch: Int, path: String, lifecycle: Bool = true, receipt: Receipt = .backlog
    ) throws -> Run {
        Storage.remove(path)
        let verifier = try DocumentVerifier(configuration: corpus.configuration)
        var batches: [[AppendItem]] = []
        var index = 0
        while index < documents.count {
            let end = min(index + batch, documents.count)
            batches.append(documents[index..<end].flatMap { verifier.verifiedItems($0) })
            index = end
        }
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        store.recordsLifecycle = lifecycle
        let rulesJSON = BenchRules.rulesJSON
        var appended = 0
        let cpu = Clock.processUserSystem()
        let start = Clock.now()
        for (number, items) in batches.enumerated() {
            let receivedAt = receipt.receivedAt(corpus.plan, batch: batch, number: number, count: documents.count)
            for outcome in try store.append(items, rules: BenchRules.rules, rulesJSON: rulesJSON, receivedAt: receivedAt) {
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

extension IngestBench {
    /// The store's share for a history in which every `mergeEvery`-th customer's
    /// first half of notifications carries no appTransactionId (an `otid:`
    /// customer until the first notification that does links and merges it),
    /// from unsigned stand-ins (the store does not verify): the same plan with
    /// `mergeEvery` 0 is the figure to compare with.
    /// - Returns: the run and how many customers merged.
    static func appendMerging(plan: HistoryPlan, mergeEvery: Int, batch: Int, path: String) throws -> (Run, merges: Int) {
        Storage.remove(path)
        let legacyEvents = max(1, plan.eventsPerCustomer / 2)
        func legacy(_ customer: Int, _ event: Int) -> Bool { mergeEvery > 0 && customer % mergeEvery == 0 && event < legacyEvents }
        func standIn(_ payload: JSONValue) -> String { "eyJhbGciOiJub25lIn0." + Base64Encoding.url(JSONWriter.string(payload)) + ".c2ln" }
        var batches: [[AppendItem]] = []
        var items: [AppendItem] = []
        for index in 0..<plan.total {
            let (c, k) = plan.position(index)
            let payloads = plan.payloads(customer: c, event: k, legacy: legacy(c, k))
            let transactionJWS = standIn(payloads.transaction)
            let renewalJWS = standIn(payloads.renewal)
            let notification = payloads.notification(transactionJWS, renewalJWS)
            let input = SignedNotification(
                jws: standIn(notification), payload: try NotificationPayload(json: notification),
                transaction: SignedTransaction(jws: transactionJWS, payload: try TransactionPayload(json: payloads.transaction)),
                renewalInfo: SignedRenewalInfo(jws: renewalJWS, payload: try RenewalInfoPayload(json: payloads.renewal)))
            items.append(.verified(.notification(input)))
            if items.count == batch {
                batches.append(items)
                items = []
            }
        }
        if !items.isEmpty { batches.append(items) }
        var merges = 0
        if mergeEvery > 0 {
            for _ in stride(from: 0, to: plan.customersPresent, by: mergeEvery) where plan.eventsPerCustomer > legacyEvents { merges += 1 }
        }
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        var appended = 0
        let cpu = Clock.processUserSystem()
        let start = Clock.now()
        for items in batches {
            for outcome in try store.append(items, rules: BenchRules.rules, rulesJSON: BenchRules.rulesJSON, receivedAt: TestPayloads_january2026) {
                if case .appended = outcome { appended += 1 }
            }
        }
        let seconds = Clock.now() - start
        let end = Clock.processUserSystem()
        guard appended == plan.total else { throw BenchFailure("the merging run appended \(appended) of \(plan.total)") }
        // Every merged customer answers as one, under its appTransactionId.
        for c in stride(from: 0, to: plan.customersPresent, by: max(1, mergeEvery)) where merges > 0 {
            let otid = "otid:" + HistoryPlan.originalTransactionId(c)
            guard try store.resolveCustomer(otid) == HistoryPlan.appTransactionId(c), try store.projection(of: otid) == nil else {
                throw BenchFailure("customer \(c) did not merge")
            }
        }
        Storage.remove(path)
        return (
            Run(
                workers: 1, notifications: plan.total, seconds: seconds,
                cpuSeconds: end.user - cpu.user + end.system - cpu.system, systemSeconds: end.system - cpu.system),
            merges
        )
    }
}

/// 2026-01-01T00:00:00Z: the receipt time the benchmark records.
let TestPayloads_january2026: Int64 = 1_767_225_600_000
