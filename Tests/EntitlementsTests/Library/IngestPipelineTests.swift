import Entitlements
import Foundation
import Synchronization
import Testing
import TestPKI
import TestSupport

/// `Engine.ingest(batches:workers:deliver:)` verifies batches side by side on its own
/// threads and appends them in order: whatever the lanes, every batch is
/// delivered once, in the order read, and the log equals a one-batch-at-a-time ingest.
@Suite struct IngestPipelineTests {

    @Test("1, 2 and 5 lanes: batches delivered once each, in order, and the same log as ingest one batch at a time",
          arguments: [1, 2, 5])
    func lanesKeepTheOrder(workers: Int) throws {
        let workspace = try Workspace(name: "pipeline")
        let history = History.generate(lines: 120, seed: 0x16)
        // Batches of uneven sizes, with a garbage line in some, numbered as a file's lines are.
        var texts = history.lines.map(\.text)
        texts.insert("not json", at: 17)
        let documents = texts.enumerated().map { InputBytes(bytes: Array($1.utf8), number: $0 + 1) }
        var batches: [[InputBytes]] = []
        var index = 0
        var size = 1
        while index < documents.count {
            let end = min(documents.count, index + size)
            batches.append(Array(documents[index..<end]))
            index = end
            size = size % 9 + 1
        }
        let engine = try workspace.engine("pipeline-\(workers).sqlite")
        var remaining = batches
        var delivered: [[IngestResult]] = []
        try engine.ingest(batches: { remaining.isEmpty ? nil : remaining.removeFirst() }, workers: workers) { delivered.append($0) }
        #expect(delivered.count == batches.count)
        // Each batch's results name its own documents, in order.
        for (batch, results) in zip(batches, delivered) {
            let numbers = results.compactMap(\.input)
            #expect(Set(numbers) == Set(batch.compactMap(\.number)), "a batch delivered out of order")
            #expect(numbers == numbers.sorted())
        }
        // The same log as one batch at a time.
        let reference = try workspace.engine("reference-\(workers).sqlite")
        for batch in batches { _ = try reference.ingest(batch) }
        let probe = try Probe(workspace.path("pipeline-\(workers).sqlite"))
        let expected = try Probe(workspace.path("reference-\(workers).sqlite"))
        #expect(try probe.identities() == expected.identities())
        #expect(try probe.quarantineCount() == expected.quarantineCount() && probe.quarantineCount() >= 1)
    }

    @Test("a batch that cannot be stored ends the ingest: thrown, nothing after it appended or delivered")
    func aFailureStopsThePipeline() throws {
        let workspace = try Workspace(name: "pipeline-failure")
        let history = History.generate(lines: 60, seed: 0x61)
        let documents = history.lines.map { InputBytes(bytes: Array($0.text.utf8)) }
        let engine = try workspace.engine("failing.sqlite")
        var batches = stride(from: 0, to: documents.count, by: 10).map { Array(documents[$0..<min($0 + 10, documents.count)]) }
        var delivered = 0
        // After the second batch is delivered, the database is made read-only behind the engine's back.
        #expect(throws: EngineError.self) {
            try engine.ingest(batches: { batches.isEmpty ? nil : batches.removeFirst() }, workers: 2) { _ in
                delivered += 1
                if delivered == 2 {
                    let probe = try? Probe(workspace.path("failing.sqlite"))
                    try? probe?.execute("CREATE TRIGGER no_more BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'stopped by the test'); END;")
                }
            }
        }
        #expect(delivered == 2)
        #expect(try Probe(workspace.path("failing.sqlite")).eventCount() > 0)
    }

    @Test("the products the lanes gather: each product the rules lack warned once, as one batch at a time warns it",
          arguments: [1, 2])
    func productWarningsFromTheLanes(workers: Int) throws {
        let workspace = try Workspace(name: "pipeline-products")
        // Products outside the rules, repeated within a batch and across batches, in
        // transactions, notifications and renewal infos; the known ones around them.
        let unknown = ["com.example.pro.montly", "com.example.gems.9", "com.example.renewal.only"]
        var texts = History.generate(lines: 40, seed: 0x63).lines.map(\.text)
        for serial in 0..<12 {
            let product = unknown[serial % 2]
            let transaction = Scenario.pki.sign(TestPayloads.transaction(
                transactionId: "29\(serial)", appTransactionId: "70400000000009\(serial)", productId: product))
            texts.insert(serial % 3 == 0
                ? TestPayloads.body(signedPayload: Scenario.pki.sign(TestPayloads.notification(
                    type: "DID_RENEW", signedDate: TestPayloads.january2025 + Int64(serial), signedTransactionInfo: transaction)))
                : TestPayloads.body(signedTransactionInfo: transaction),
                at: min(texts.count, serial * 3))
        }
        texts.append(TestPayloads.body(signedRenewalInfo: Scenario.pki.sign(TestPayloads.renewalInfo(
            originalTransactionId: "2999", appTransactionId: "704000000000009999", productId: unknown[2]))))
        let documents = texts.enumerated().map { InputBytes(bytes: Array($1.utf8), number: $0 + 1) }
        let batches = stride(from: 0, to: documents.count, by: 5).map { Array(documents[$0..<min($0 + 5, documents.count)]) }

        let engine = try workspace.engine("products-\(workers).sqlite")
        var remaining = batches
        var appended = 0
        try engine.ingest(batches: { remaining.isEmpty ? nil : remaining.removeFirst() }, workers: workers) { results in
            appended += results.filter { $0.outcome == .appended }.count
        }
        #expect(appended >= 13)
        let warnings = engine.takeProductWarnings()
        let reference = try workspace.engine("products-reference-\(workers).sqlite")
        for batch in batches { _ = try reference.ingest(batch) }
        #expect(warnings == reference.takeProductWarnings())
        for product in unknown {
            #expect(warnings.filter { $0.hasPrefix("warning: product \(product) is not in rules.products") }.count == 1, "\(warnings)")
        }
        #expect(warnings.count == unknown.count, "\(warnings)")
        // Reported once per engine: the same products again warn nothing.
        var again = [batches[0], batches[1]]
        try engine.ingest(batches: { again.isEmpty ? nil : again.removeFirst() }, workers: workers) { _ in }
        #expect(engine.takeProductWarnings().isEmpty)
    }

    @Test("memory stays bounded: at most workers + 3 batches are read and not yet delivered", arguments: [1, 2])
    func readAheadIsBounded(workers: Int) throws {
        let workspace = try Workspace(name: "pipeline-bound")
        let history = History.generate(lines: 80, seed: 0x62)
        let documents = history.lines.map { InputBytes(bytes: Array($0.text.utf8)) }
        let engine = try workspace.engine("bound-\(workers).sqlite")
        let batches = stride(from: 0, to: documents.count, by: 2).map { Array(documents[$0..<min($0 + 2, documents.count)]) }
        // Read on the lanes, delivered on this thread: the counts cross threads.
        let counts = Mutex((read: 0, delivered: 0, mostAhead: 0))
        try engine.ingest(batches: {
            counts.withLock { counts -> [InputBytes]? in
                guard counts.read < batches.count else { return nil }
                counts.read += 1
                counts.mostAhead = max(counts.mostAhead, counts.read - counts.delivered)
                return batches[counts.read - 1]
            }
        }, workers: workers) { _ in counts.withLock { $0.delivered += 1 } }
        let final = counts.withLock { $0 }
        #expect(final.delivered == batches.count)
        // workers + 2 waiting or verifying, and the one being appended.
        #expect(final.mostAhead <= workers + 3, "\(final.mostAhead) batches read ahead of the last delivered")
        #expect(final.mostAhead >= 2, "the lanes read ahead of the append at all")
    }

    @Test("a time of receipt per batch: each batch's events logged with its own, asked for in order", arguments: [1, 2])
    func receivedAtOfEachBatch(workers: Int) throws {
        let workspace = try Workspace(name: "pipeline-received")
        let history = History.generate(lines: 60, seed: 0x52)
        let documents = history.lines.map { InputBytes(bytes: Array($0.text.utf8)) }
        var batches = stride(from: 0, to: documents.count, by: 7).map { Array(documents[$0..<min($0 + 7, documents.count)]) }
        let count = batches.count
        let engine = try workspace.engine("received-\(workers).sqlite")
        let start: Int64 = 1_767_225_600_000
        var asked: [Int] = []
        var appended = 0
        try engine.ingest(
            batches: { batches.isEmpty ? nil : batches.removeFirst() }, workers: workers,
            receivedAtOfBatch: { number in
                asked.append(number)
                return start + Int64(number) * 1_000
            }
        ) { results in appended += results.filter { $0.outcome == .appended }.count }
        #expect(asked == Array(0..<count))
        let probe = try Probe(workspace.path("received-\(workers).sqlite"))
        // Every event was received at one of the batches' times, and each batch's time is in the log.
        let times = try probe.strings("SELECT DISTINCT CAST(received_at AS TEXT) FROM events").compactMap { Int64($0) }
        let logged = try probe.eventCount()
        #expect(appended > 0 && Int64(appended) == logged)
        #expect(times.allSatisfy { ($0 - start) % 1_000 == 0 && ($0 - start) / 1_000 < Int64(count) && $0 >= start })
        #expect(times.count > count / 2, "\(times.count) distinct times for \(count) batches")
        // The log is in the order received: the times never go back.
        let inOrder = try probe.strings("SELECT CAST(received_at AS TEXT) FROM events ORDER BY seq").compactMap { Int64($0) }
        #expect(inOrder == inOrder.sorted())
    }
}
