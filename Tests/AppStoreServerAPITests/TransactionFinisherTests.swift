import EntitlementCore
import Entitlements
import EventStore
import Foundation
import Synchronization
import Testing
import TestPKI

/// ``TransactionFinisher`` as a server embedding the library runs it: beside an engine that
/// ingests, retrying what got no answer later, never calling twice; and the async twins of
/// the support commands.
@Suite struct TransactionFinisherTests {
    typealias S = SupportScenario

    final class Clock: Sendable {
        let now = Mutex(Engine.now() + 60_000)
        func advance(_ milliseconds: Int64) { now.withLock { $0 += milliseconds } }
        var value: Int64 { now.withLock { $0 } }
    }

    @Test func aFinishWithoutAnAnswerIsTriedAgainWhenDueAndNeverAfterSuccess() throws {
        let fixture = try SyncFixture()
        try S.enableFinishes(fixture)
        let unavailable = Mutex(true)
        fixture.mock.handle { request in
            guard request.method == "POST", request.path == "/inApps/v1/transactions/3000000000099301/finish" else { return MockResponse(status: 404) }
            return unavailable.withLock { $0 } ? .error(503, code: 5_000_001, message: "Service unavailable.") : MockResponse(status: 200)
        }
        let engine = try fixture.engine()
        #expect(engine.finishesTransactions)
        let clock = Clock()
        let client = try AppStoreSync.client(for: fixture.configuration, environment: .sandbox, transport: try HTTPClient(), sleep: { _ in })
        let finisher = TransactionFinisher(engine: engine, clients: [.sandbox: client], clock: { clock.value })

        let results = try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: S.signed(S.transaction("3000000000099301"))))])
        #expect(results.map(\.outcome) == [.appended])
        let first = finisher.finishDue()
        #expect(first.map(\.state) == [.pending])
        #expect(first.first?.status == 503)
        #expect(first.first?.recorded == true)
        #expect(finisher.finishDue().isEmpty, "not due again before its delay")

        unavailable.withLock { $0 = false }
        clock.advance(TransactionFinisher.firstDelay)
        #expect(finisher.finishDue().map(\.state) == [.finished])
        clock.advance(24 * 3_600_000)
        #expect(finisher.finishDue().isEmpty)
        let row = try S.finish("3000000000099301", in: fixture, database: "synced.sqlite")
        #expect(row?.state == "finished")
        #expect(row?.attempts == 2)
        #expect(fixture.mock.requests.count == 2)
        #expect(fixture.mock.requests.allSatisfy { $0.tokenProblem == nil })

        // A second engine on the same database (a restart) has nothing to call.
        let reopened = try fixture.engine()
        #expect(TransactionFinisher(engine: reopened, clients: [.sandbox: client]).finishDue().isEmpty)
    }

    /// With replicated acknowledgments, nothing is finished at Apple that the replica does
    /// not hold: a finish whose batch is not confirmed stays queued, and Apple is not called.
    @Test func aFinishWaitsForTheReplicaToHoldItsBatch() throws {
        let fixture = try SyncFixture()
        try S.enableFinishes(fixture)
        let url = URL(fileURLWithPath: fixture.configPath)
        guard case .object(var config) = try JSONParser().parse(Array(try Data(contentsOf: url))) else { throw MockError("configuration") }
        // No Litestream answers on this socket: no batch is ever confirmed.
        config["replication"] = ["litestream": ["socket": "no-litestream.sock", "timeoutMs": 200]]
        try Data(JSONWriter.string(.object(config)).utf8).write(to: url)
        fixture.mock.handle { _ in MockResponse(status: 200) }
        let engine = try fixture.engine()
        let clock = Clock()
        let client = try AppStoreSync.client(for: fixture.configuration, environment: .sandbox, transport: try HTTPClient(), sleep: { _ in })
        let finisher = TransactionFinisher(engine: engine, clients: [.sandbox: client], clock: { clock.value })

        do {
            _ = try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: S.signed(S.transaction("3000000000099302"))))])
            Issue.record("acknowledged without a replica")
        } catch {
            #expect(error.code.rawValue == "REPLICATION_TIMEOUT", "committed locally, not acknowledged")
        }
        #expect(finisher.finishDue().isEmpty)
        #expect(fixture.mock.requests.isEmpty, "Apple is not told of a transaction the replica may not hold")
        #expect(try S.finish("3000000000099302", in: fixture, database: "synced.sqlite")?.state == "pending")
    }

    @Test func startedBesideTheEngineItFinishesWhatIsIngestedWithoutBeingAsked() async throws {
        let fixture = try SyncFixture()
        try S.enableFinishes(fixture)
        fixture.mock.handle { request in request.path.hasSuffix("/finish") ? MockResponse(status: 200) : MockResponse(status: 404) }
        let engine = try fixture.engine()
        let finisher = try TransactionFinisher(engine: engine)
        finisher.start()
        _ = try await engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: S.signed(S.transaction("3000000000099401"))))])
        #expect(S.eventually { fixture.mock.requests.count == 1 })
        finisher.stop()
        #expect(fixture.mock.requests.map(\.path) == ["/inApps/v1/transactions/3000000000099401/finish"])
    }

    @Test func theAsyncTwinsOfTheSupportCommands() async throws {
        let fixture = try SyncFixture()
        let jws = S.signed(S.transaction("3000000000099501"))
        fixture.mock.handle { request in
            switch (request.method, request.path) {
            case ("GET", "/inApps/v1/transactions/3000000000099501"): return .json(["signedTransactionInfo": .string(jws)])
            case ("GET", "/inApps/v1/lookup/MQ5Y1Z2X3W"): return .json(["status": 0, "signedTransactions": [.string(jws)]])
            case ("GET", "/inApps/v2/refund/lookup/3000000000099501"): return .json(["signedTransactions": [], "revision": "r", "hasMore": false])
            case ("POST", "/inApps/v1/transactions/3000000000099501/finish"): return MockResponse(status: 200)
            default: return MockResponse(status: 404)
            }
        }
        let sync = try fixture.sync(try fixture.engine())
        let info = await sync.transactionInfo("3000000000099501")
        #expect(info.outcome.failure == nil)
        #expect(info.outcome.totals == SyncTotals(appended: 1))
        #expect(info.transaction?["productId"] == "com.example.lifetime")
        let lookup = await sync.lookUpOrder("MQ5Y1Z2X3W")
        #expect(lookup.status == 0)
        #expect(lookup.views.map(\.appTransactionId) == [S.appTransactionId])
        #expect(lookup.outcome.totals == SyncTotals(duplicate: 1))
        let refunds = await sync.refundHistory("3000000000099501")
        #expect(refunds.outcome.failure == nil)
        #expect(refunds.refunds.isEmpty)
        let finished = await sync.finishTransaction("3000000000099501")
        #expect(finished.state == .finished)
        #expect(finished.recorded)
    }
}
