import Entitlements
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import EntitlementsServer

extension Reliability {
    /// `POST /notifications` from many clients at once: verified in shared passes, committed
    /// together, each request answered with its own line once its commit is done.
    @Suite("Serve: notifications committed together")
    struct NotificationIngestTests {
        @Test("concurrent requests mixing notifications, forgeries, junk past the quarantine bound and the same body twice: each its own answer")
        func mixedConcurrentRequests() throws {
            let server = try TestServer(name: "serve-together") { options in
                options.quarantine = QuarantineBound(perClientInputs: 2, perClientBytes: 1 << 20, totalInputs: 10, summaryIntervalMilliseconds: 0)
            }
            enum Expected: Equatable { case appended(String), rejected(String), appendedOrDuplicate(String) }
            var requests: [(body: String, expected: Expected)] = []
            for n in 1...24 { requests.append((ServeSamples.notification(100 + n), .appended(ServeSamples.customer(100 + n)))) }
            for n in 1...4 { requests.append((ServeSamples.notification(200 + n, signer: ServeSamples.forger), .rejected("INVALID_CHAIN"))) }
            for n in 1...4 { requests.append(("junk \(n)", .rejected("MALFORMED_INPUT"))) }
            // The same notification posted twice at once (Apple retrying a slow answer): one appended, one duplicate.
            let twice = ServeSamples.notification(300)
            requests.append((twice, .appendedOrDuplicate(ServeSamples.customer(300))))
            requests.append((twice, .appendedOrDuplicate(ServeSamples.customer(300))))
            let work = requests
            let answers = Mutex([RawClient.Response?](repeating: nil, count: work.count))
            let finished = ServeLoad.concurrently(work.count) { index in
                let response = try? server.exchange("POST", "/notifications", body: work[index].body)
                answers.withLock { $0[index] = response }
            }
            #expect(finished)
            let responses = answers.withLock { $0 }
            var twiceResults: [String] = []
            for (index, request) in work.enumerated() {
                let response = try #require(responses[index], "request \(index) got no answer")
                #expect(response.status == 200, "request \(index): \(response.text)")
                #expect(response.json?["input"] == 1)
                switch request.expected {
                case .appended(let customer):
                    #expect(response.json?["result"] == "appended", "request \(index): \(response.text)")
                    #expect(response.json?["appTransactionId"] == .string(customer))
                case .rejected(let code):
                    #expect(response.json?["result"] == "rejected", "request \(index): \(response.text)")
                    #expect(response.json?["error"]?["code"] == .string(code), "request \(index): \(response.text)")
                case .appendedOrDuplicate(let customer):
                    #expect(response.json?["appTransactionId"] == .string(customer))
                    if case .string(let result)? = response.json?["result"] { twiceResults.append(result) }
                }
            }
            #expect(twiceResults.sorted() == ["appended", "duplicate"])
            let statistics = server.server.verificationStatistics
            #expect(statistics.bodies == work.count)
            #expect(statistics.passes >= 1 && statistics.passes <= work.count)
            let probe = try Probe(server.workspace.path("serve.sqlite"))
            #expect(try probe.eventCount() == 25)
            // Two rejections kept (the client's bound), the six others counted in summary rows.
            #expect(try probe.int("SELECT count(*) FROM quarantine WHERE code IN ('INVALID_CHAIN', 'MALFORMED_INPUT')") == 2)
            let notKept = try TestServer.eventually {
                try probe.strings("SELECT message FROM quarantine WHERE code = 'NOT_KEPT'").compactMap { Int($0.split(separator: " ")[0]) }
                    .reduce(0, +) == 6
            }
            #expect(notKept)
        }

        @Test("the committing thread: jobs from many threads committed together, each told its own results in order; none after finishing")
        func batcherJobs() throws {
            let workspace = try Workspace(name: "batcher-jobs")
            let engine = try workspace.engine("batcher.sqlite")
            let batcher = IngestBatcher(engine: engine, budget: QuarantineBudget(bound: QuarantineBound()))
            let verifier = engine.documentVerifier
            func item(_ n: Int) -> AppendItem {
                verifier.verifiedNotification(InputBytes(bytes: Array(ServeSamples.notification(n).utf8)), otherwise: "not a notification")
            }
            // Job j holds 1 to 3 notifications; the second job repeats the first's.
            let jobs: [[Int]] = (0..<24).map { j in j == 1 ? [400] : (0...(j % 3)).map { 400 + 10 * j + $0 } }
            let items = jobs.map { $0.map(item) }
            let answers = Mutex([Result<[IngestResult], EngineError>?](repeating: nil, count: jobs.count))
            #expect(ServeLoad.concurrently(jobs.count) { j in
                let result = batcher.commit(items[j])
                answers.withLock { $0[j] = result }
            })
            let results = answers.withLock { $0 }
            var appended = Set<String>()
            for (j, numbers) in jobs.enumerated() {
                let lines = try #require(try results[j]?.get(), "job \(j)")
                #expect(lines.map(\.appTransactionId) == numbers.map { ServeSamples.customer($0) }, "job \(j)")
                for line in lines where line.outcome == .appended { appended.insert(line.eventId ?? "") }
            }
            // The repeated notification: appended by one of the two jobs, a duplicate in the other.
            let repeated = [results[0], results[1]].compactMap { try? $0?.get().first?.outcome }
            #expect(repeated.sorted { $0.rawValue < $1.rawValue } == [.appended, .duplicate])
            let total = jobs.flatMap { $0 }.count
            #expect(appended.count == total - 1)
            let statistics = batcher.statistics
            #expect(statistics.items == total)
            #expect(statistics.batches >= 1 && statistics.batches <= jobs.count)
            batcher.finish()
            guard case .failure(let error) = batcher.commit([item(499)]) else {
                Issue.record("a commit after finishing was accepted")
                return
            }
            #expect(error.code == .shuttingDown)
            let told = Mutex(0)
            batcher.submit([IngestBatcher.Job(items: [item(498)]) { result, _ in
                if case .failure(let error) = result, error.code == .shuttingDown { told.withLock { $0 += 1 } }
            }])
            #expect(told.withLock { $0 } == 1)
        }
    }
}
