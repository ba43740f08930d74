import EntitlementCore
import Entitlements
import Foundation
import Synchronization
import TestPKI
import Testing
import TestSupport

/// Queries on one shared engine run on connections of their own, beside the
/// writer: while one thread ingests and then replays, others query, and every
/// answer is one the engine could give (never an error, never a half-written state).
@Suite struct ConcurrentQueryTests {
    /// What the threads report, behind one lock: every read and every write takes it.
    final class Failures: Sendable {
        private struct Reports {
            var messages: [String] = []
            var answers = 0
        }
        private let reports = Mutex(Reports())
        var messages: [String] { reports.withLock { $0.messages } }
        var answers: Int { reports.withLock { $0.answers } }
        func record(_ message: String) { reports.withLock { $0.messages.append(message) } }
        func answered() { reports.withLock { $0.answers += 1 } }

        /// Waits until at least `count` answers were given (bounded: 60 s); whether they were.
        func waitForAnswers(_ count: Int, timeout: Double = 60) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while answers < count {
                if Date() > deadline { return false }
                usleep(500)
            }
            return true
        }
    }

    @Test func queriesFromSeveralThreadsDuringIngestAndReplay() throws {
        let documents = ReplayEqualsIngestTests.history(seed: 4)
        let engine = try E2E.engine(path: E2E.folder().appendingPathComponent("concurrent.sqlite").path)
        let moment = TestPayloads.january2025 + 60 * ReplayEqualsIngestTests.day
        let customers = (0..<4).map { "70400000000000\(1000 + $0)" }

        // What the answers are once everything is ingested, from another engine.
        let reference = try E2E.engine()
        _ = try reference.ingest(documents.map(InputBytes.init))
        let final = try customers.map { JSONWriter.string(try reference.query(.appTransactionId($0), at: moment).json()) }

        let failures = Failures()
        let done = ManagedAtomicFlag()
        let group = DispatchGroup()
        // Threads of their own: the test runner keeps Dispatch's pool busy.
        for lane in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                var index = lane
                while !done.isSet {
                    let id = customers[index % customers.count]
                    do {
                        switch try engine.query(.appTransactionId(id), at: moment) {
                        case .customer(let view):
                            if view.appTransactionId != id { failures.record("asked \(id), answered \(view.appTransactionId)") }
                        case .notFound: break  // not ingested yet
                        case .account: failures.record("an account answer to an appTransactionId query")
                        }
                        failures.answered()
                    } catch {
                        failures.record("query \(id): \(error)")
                    }
                    index += 1
                }
            }.start()
        }
        // The readers are running before the writer starts.
        let started = failures.waitForAnswers(3)
        #expect(started, "the readers answered nothing within 60 s")
        // The writer: one document at a time, then a replay, while the readers run. After each
        // write it waits until the readers have answered again (an event, not a time), so
        // queries interleave with every write however the machine schedules the threads.
        var answeredDuringWrites = true
        for document in documents {
            let before = failures.answers
            _ = try engine.ingest([InputBytes(document)])
            answeredDuringWrites = answeredDuringWrites && failures.waitForAnswers(before + 1)
        }
        let report = try engine.replay(now: moment)
        done.set()
        #expect(group.wait(timeout: .now() + 120) == .success, "the readers did not stop within 120 s")

        #expect(failures.messages.isEmpty, "\(failures.messages.prefix(5))")
        #expect(answeredDuringWrites, "the readers stopped answering while the writer wrote")
        #expect(failures.answers > documents.count)
        #expect(report.changed == 0)
        // Afterwards every thread's connection sees the final state.
        let after = try customers.map { JSONWriter.string(try engine.query(.appTransactionId($0), at: moment).json()) }
        #expect(after == final)
    }
}

extension ConcurrentQueryTests {
    /// Replay and pipelined ingest wait for work they hand to other threads; that
    /// work runs on threads of their own, so a server whose handlers fill
    /// Dispatch's shared pool does not stall them.
    @Test func replayAndIngestFinishWhileDispatchsPoolIsFull() throws {
        // Handlers that keep every pool thread busy (busy, not blocked: Dispatch adds
        // threads for blocked ones after a while, never for busy ones).
        let release = ManagedAtomicFlag()
        let blockers = 2 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        for _ in 0..<blockers { DispatchQueue.global().async { while !release.isSet {} } }
        defer { release.set() }

        let documents = ReplayEqualsIngestTests.history(seed: 6)
        let engine = try E2E.engine(path: E2E.folder().appendingPathComponent("pool.sqlite").path)
        let finished = DispatchSemaphore(value: 0)
        let outcome = Failures()
        Thread {
            do {
                var batches = stride(from: 0, to: documents.count, by: 5).map {
                    Array(documents[$0..<min($0 + 5, documents.count)]).map(InputBytes.init)
                }
                var delivered = 0
                try engine.ingest(batches: { batches.isEmpty ? nil : batches.removeFirst() }, workers: 2) { delivered += $0.count }
                if delivered != documents.count { outcome.record("ingest delivered \(delivered) of \(documents.count)") }
                let report = try engine.replay(now: TestPayloads.january2025)
                if report.customers != 4 { outcome.record("replay rebuilt \(report.customers) customers") }
            } catch {
                outcome.record("\(error)")
            }
            finished.signal()
        }.start()
        let inTime = finished.wait(timeout: .now() + 120) == .success
        #expect(inTime, "ingest and replay did not finish while Dispatch's pool was full")
        #expect(outcome.messages.isEmpty, "\(outcome.messages)")
        if !inTime {
            release.set()
            finished.wait()
        }
    }
}

/// A flag set once, read from other threads.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
