import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Testing
import TestPKI
import TestSupport

/// Concurrent `async` ingests (a server answering each webhook with its own call) are
/// committed together, and each call still gets exactly what it would have got alone.
@Suite(.serialized) struct GroupCommitTests {
    /// `count` calls at once; each call's results, by its number.
    static func concurrently(
        _ count: Int, _ call: @escaping @Sendable (Int) async throws -> [IngestResult]
    ) async throws -> [[IngestResult]] {
        try await withThrowingTaskGroup(of: (Int, [IngestResult]).self) { group in
            for index in 0..<count { group.addTask { (index, try await call(index)) } }
            var results = [[IngestResult]](repeating: [], count: count)
            for try await (index, callResults) in group { results[index] = callResults }
            return results
        }
    }

    /// Waits until `condition` holds, checking every 10 ms, for at most `seconds`.
    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return true
    }

    /// `count` calls made at once while another connection holds the database's write lock:
    /// the first call's commit waits for it, and the lock is let go once every call has been
    /// verified and handed over. Each call's results, and the transactions they took.
    static func callsWhileLocked(
        _ count: Int, database: String, engine: Engine, _ call: @escaping @Sendable (Int) async throws -> [IngestResult]
    ) async throws -> (results: [[IngestResult]], transactions: Int, items: Int) {
        let before = engine.groupCommitStatistics
        let holder = try Connection(path: database, mode: .readWrite)
        try holder.execute("BEGIN IMMEDIATE")
        let calls = Task { try await concurrently(count, call) }
        let allHandedOver = try await waitUntil(120) { engine.groupCommitStatistics.submitted - before.submitted == count }
        try holder.execute("ROLLBACK")
        #expect(allHandedOver, "\(engine.groupCommitStatistics.submitted - before.submitted) of \(count) calls handed over")
        let results = try await calls.value
        let after = engine.groupCommitStatistics
        return (results, after.batches - before.batches, after.items - before.items)
    }

    /// Checks that each line's call gave its own line's results, each with the document
    /// number `input`, and that every event was appended once; returns how many were.
    @discardableResult
    static func expectOwnResults(_ results: [[IngestResult]], for history: History, input: Int?) -> Int {
        var appended = 0
        for (line, lineResults) in zip(history.lines, results) {
            #expect(lineResults.count == line.items.count, "\(lineResults.count) results for \(line.items.count) items")
            for (result, item) in zip(lineResults, line.items) {
                #expect(result.input == input)
                switch item {
                case .event:
                    #expect(result.outcome == .appended || result.outcome == .duplicate, "\(result)")
                    if result.outcome == .appended { appended += 1 }
                case .rejected(let code):
                    #expect(result.outcome == .rejected && result.errorCode == code, "\(result)")
                }
            }
        }
        // Every event stored once, whichever call carried it first.
        #expect(appended == history.identities.count, "\(appended) events appended, \(history.identities.count) expected")
        return appended
    }

    /// A workspace whose lock waits outlast the tests' holds, `lines` lines of history, and an
    /// engine on the database `name` that exists already.
    static func fixture(_ name: String, lines: Int, seed: UInt64) async throws -> (Workspace, History, Engine) {
        let workspace = try Workspace(name: "group-commit-\(name)", busyTimeoutMilliseconds: 120_000)
        let engine = try workspace.engine("\(name).sqlite")
        _ = try await engine.ingest([])
        return (workspace, History.generate(lines: lines, seed: seed), engine)
    }

    @Test("calls made while a commit waits are committed together, each answered as if alone")
    func callsWaitingForACommitShareTheNext() async throws {
        let (workspace, history, engine) = try await Self.fixture("group", lines: 48, seed: 0x6C0)

        let lines = history.lines
        let (results, transactions, items) = try await Self.callsWhileLocked(
            lines.count, database: workspace.path("group.sqlite"), engine: engine
        ) { index in
            try await engine.ingest([InputBytes(bytes: Array(lines[index].text.utf8), number: 1)])
        }
        // The waiting commit took what had arrived when it began, the next one all the rest.
        #expect(transactions >= 1 && transactions <= 2, "\(transactions) transactions")
        #expect(items == results.reduce(0) { $0 + $1.count })
        // Each numbered as its call's first document.
        Self.expectOwnResults(results, for: history, input: 1)
        #expect(try Probe(workspace.path("group.sqlite")).eventCount() == Int64(history.identities.count))

        // The same customers as one call after another gives, and a log that audits clean.
        let alone = try workspace.engine("alone.sqlite")
        for line in history.lines { _ = try await alone.ingest([InputBytes(bytes: Array(line.text.utf8), number: 1)]) }
        let at = TestPayloads.january2025 + 400 * 86_400_000
        for customer in history.customers {
            let together = try? await engine.query(.appTransactionId(customer), at: at).json()
            let oneByOne = try? await alone.query(.appTransactionId(customer), at: at).json()
            #expect(together == oneByOne, "customer \(customer)")
        }
        let audit = try await engine.audit()
        #expect(audit.firstMismatch == nil && audit.events == Int64(history.identities.count), "\(audit)")
    }

    @Test("items verified by the caller and appended by concurrent calls share transactions too")
    func verifiedItemsShareTransactions() async throws {
        let (workspace, history, engine) = try await Self.fixture("verified", lines: 24, seed: 0x6C3)
        let items = history.lines.map { engine.documentVerifier.verifiedItems(InputBytes(bytes: Array($0.text.utf8))) }

        let (results, transactions, _) = try await Self.callsWhileLocked(
            items.count, database: workspace.path("verified.sqlite"), engine: engine
        ) { index in
            try await engine.append(verified: items[index])
        }
        #expect(transactions >= 1 && transactions <= 2, "\(transactions) transactions")
        // append(verified:) leaves the documents' numbers to its caller.
        Self.expectOwnResults(results, for: history, input: nil)
        #expect(try Probe(workspace.path("verified.sqlite")).eventCount() == Int64(history.identities.count))
    }

    @Test("a batch that cannot be stored is the failure of every call in it")
    func failureReachesEveryCall() async throws {
        let workspace = try Workspace(name: "group-commit-fails")
        let history = History.generate(lines: 12, seed: 0x6C1)
        _ = try await workspace.engine("shared.sqlite").ingest([])
        let readOnly = try workspace.engine("shared.sqlite", mode: .readOnly)
        // One call alone, as the code every concurrent call must give.
        var alone: EngineError? = nil
        do throws(EngineError) { _ = try await readOnly.ingest([InputBytes(bytes: Array(history.lines[0].text.utf8))]) } catch { alone = error }
        let expected = try #require(alone)

        let outcomes = await withTaskGroup(of: EngineError?.self) { group in
            for line in history.lines {
                group.addTask {
                    do throws(EngineError) {
                        _ = try await readOnly.ingest([InputBytes(bytes: Array(line.text.utf8))])
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            var errors: [EngineError?] = []
            for await outcome in group { errors.append(outcome) }
            return errors
        }
        #expect(outcomes.count == history.lines.count)
        for outcome in outcomes {
            #expect(outcome?.code == expected.code, "\(String(describing: outcome)) where one call alone gave \(expected)")
        }
        #expect(readOnly.groupCommitStatistics.batches == 0)
        #expect(try Probe(workspace.path("shared.sqlite")).eventCount() == 0)
    }

    @Test("with replication, a call answers only once the replica confirms: unconfirmed, REPLICATION_TIMEOUT, and kept locally")
    func unconfirmedCallsAreNotAcknowledged() async throws {
        let workspace = try Workspace(name: "group-commit-unreplicated")
        let history = History.generate(lines: 16, seed: 0x6C2)
        let plain = Tool.read(workspace.configPath)
        try workspace.addReplication("{\"litestream\": {\"socket\": \"\(workspace.path("nobody.sock"))\", \"timeoutMs\": 300}}")
        let engine = try workspace.engine("alone.sqlite")

        let outcomes = await withTaskGroup(of: (Int, Result<[IngestResult], EngineError>).self) { group in
            for (index, line) in history.lines.enumerated() {
                group.addTask {
                    do throws(EngineError) {
                        return (index, .success(try await engine.ingest([InputBytes(bytes: Array(line.text.utf8))])))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var outcomes: [(Int, Result<[IngestResult], EngineError>)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        var committedLines: [Int] = []
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(let results):
                Issue.record("line \(index + 1) acknowledged without the replica: \(results)")
            case .failure(let error):
                #expect(error.code == .replicationTimeout, "\(error)")
                committedLines.append(index)
            }
        }
        #expect(committedLines.count == history.lines.count)

        // Committed locally all the same: sent again without replication, every event is a duplicate.
        try Data(plain).write(to: workspace.configURL)
        let again = try workspace.engine("alone.sqlite", mode: .existing)
        for line in history.lines {
            let results = try await again.ingest([InputBytes(bytes: Array(line.text.utf8))])
            for (result, item) in zip(results, line.items) {
                if case .event = item { #expect(result.outcome == .duplicate, "\(result)") }
            }
        }
    }
}
