import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// The lifecycle feed (specification section 12), through the library and the command line.
@Suite struct LifecycleCommandTests {
    static let day: Int64 = 86_400_000

    /// Every event the engine derives from all of its data (section 12's pure
    /// function), due by `now`, over every customer the feed or the history names.
    static func derived(_ engine: Engine, customers: some Sequence<String>, now: Int64) throws -> Set<String> {
        var ids = Set<String>()
        for key in Set(customers) {
            ids.formUnion(try engine.derivedLifecycle(of: key).filter { $0.effectiveAt <= now }.map(\.id))
        }
        return ids
    }

    /// The ids recorded, CUSTOMER_MERGED left out (the store records it at a merge: it
    /// depends on the order of arrival, so no pure function of the data gives it).
    static func recorded(_ records: [LifecycleRecord]) -> Set<String> {
        Set(records.filter { $0.type != .customerMerged }.map(\.id))
    }

    /// The property of section 12: for randomized histories (subscriptions that renew,
    /// lapse into billing retry and get refunded, consumables, passes, links that arrive
    /// first, last or never), ingested in random batches with duplicates while time
    /// passes, every event of the whole data is recorded exactly once; ingested at once
    /// in any order, exactly the events of the whole data are recorded; a replay, and
    /// reading again, record nothing.
    @Test(arguments: PropertySeeds.seeds([31, 32, 33, 34, 35]))
    func recordedOnceWhateverTheOrder(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let history = ReplayEqualsIngestTests.history(seed: seed)
        var documents = history + history.filter { _ in random.int(0..<4) == 0 }
        random.shuffle(&documents)

        // In batches, while the clock moves on: events dated after a batch wait for their time.
        let engine = try E2E.engine()
        var clock = TestPayloads.january2025 - Self.day
        var index = 0
        while index < documents.count {
            let count = random.int(1..<9)
            _ = try engine.ingest(documents[index..<min(documents.count, index + count)].map(InputBytes.init), receivedAt: clock)
            index += count
            try engine.recordDueLifecycle(now: clock)
            // (A merge is dated by its linking object's signedDate, which this clock may precede.)
            let late = try engine.lifecycle(since: 0, recordingDueAt: clock).filter {
                !(($0.effectiveAt <= $0.recordedAt || $0.type == .customerMerged) && $0.recordedAt <= clock)
            }
            #expect(late.isEmpty, "\(late.map { ($0.id, $0.effectiveAt, $0.recordedAt, clock) })")
            clock += Int64(random.int(0..<12)) * Self.day + Int64(random.int(0..<86_400_000))
        }
        let now = Engine.now()
        let all = try engine.lifecycle(since: 0, recordingDueAt: now)
        #expect(Set(all.map(\.id)).count == all.count, "an id recorded twice")
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
        let customers = ChangeFeedTests.customers + all.map(\.appTransactionId)
        let whole = try Self.derived(engine, customers: customers, now: now)
        #expect(!whole.isEmpty)
        let missing = whole.subtracting(Self.recorded(all))
        #expect(missing.isEmpty, "events of the whole data never recorded: \(missing.sorted())")
        // What is recorded beyond the whole data's events was true of what was known then
        // (an expiry before a late renewal, a start that turned out not to be the first, a
        // turn of the renewal info before an earlier version arrived, a merge); events
        // each of one signed object alone (a purchase, a refund) are never of that kind.
        let extra = all.filter { !whole.contains($0.id) }
        #expect(extra.allSatisfy { ![.purchase, .refund, .familyRevoke, .consumptionRequest, .consentRescinded].contains($0.type) }, "\(extra.map(\.id))")

        // Reading again, and replaying the same events, record nothing.
        #expect(try engine.lifecycle(since: 0, recordingDueAt: now) == all)
        _ = try engine.replay()
        #expect(try engine.lifecycle() == all)

        // All of it at once, in another order with other duplicates: exactly the whole data's events.
        var again = history + history.filter { _ in random.int(0..<3) == 0 }
        random.shuffle(&again)
        let atOnce = try E2E.engine()
        _ = try atOnce.ingest(again.map(InputBytes.init), receivedAt: now)
        let onceRecords = try atOnce.lifecycle(since: 0, recordingDueAt: now)
        #expect(Self.recorded(onceRecords) == whole)
        #expect(try Self.derived(atOnce, customers: customers, now: now) == whole)
    }

    /// The command line: the specification's line, --since, --limit, bad cursors, and
    /// --follow printing an event as it is ingested and an expiry when time brings it.
    @Test func commandLine() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let now = Engine.now()
        let trial = TestPayloads.transaction(
            transactionId: "2000000000000101", originalTransactionId: "2000000000000101", purchaseDate: now - 40 * Self.day,
            expiresDate: now - 33 * Self.day, signedDate: now - 40 * Self.day, price: 0, offerType: 1, offerDiscountType: "FREE_TRIAL")
        let paid = TestPayloads.transaction(
            transactionId: "2000000000000102", originalTransactionId: "2000000000000101", purchaseDate: now - 33 * Self.day,
            expiresDate: now - 3 * Self.day + 30 * Self.day, signedDate: now - 33 * Self.day, price: 9990)
        let input = folder.appendingPathComponent("in.ndjson")
        let consumption = TestPayloads.body(
            signedPayload: E2E.pki.sign(
                TestPayloads.notification(
                    type: "CONSUMPTION_REQUEST", uuid: "5e000000-0000-4000-8000-00000000c001", signedDate: now - Self.day,
                    signedTransactionInfo: E2E.pki.sign(paid), consumptionRequestReason: "UNINTENDED_PURCHASE")))
        let lines = [
            TestPayloads.body(signedTransactionInfo: E2E.pki.sign(trial)), TestPayloads.body(signedTransactionInfo: E2E.pki.sign(paid)),
            consumption,
        ]
        try Data(lines.joined(separator: "\n").utf8).write(to: input)
        let missing = try E2E.run(["lifecycle", "--config", config], in: folder)
        #expect(missing.status != 0)
        let ingested = try E2E.run(["ingest", "--config", config, input.path], in: folder)
        #expect(ingested.status == 0, "\(ingested.stderr)")

        let all = try E2E.run(["lifecycle", "--config", config], in: folder)
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.lines.map { $0["type"] } == ["SUBSCRIPTION_STARTED", "RENEWAL", "CONSUMPTION_REQUEST"])
        #expect(all.lines.map { $0["cursor"] } == [1, 2, 3])
        let renewal = all.lines[1]
        let text = JSONWriter.string(renewal)
        #expect(
            text.hasPrefix(
                #"{"cursor":2,"id":"RENEWAL:2000000000000102","type":"RENEWAL","appTransactionId":"704000000000000001","originalTransactionId":"2000000000000101","transactionId":"2000000000000102","productId":"com.example.pro.monthly","entitlements":["pro"],"environment":"Sandbox","price":9990,"currency":"USD","periodType":"NORMAL","isTrialConversion":true,"effectiveAt":"#),
            "\(text)")
        if case .int(let recordedAt)? = renewal["recordedAt"] { #expect(recordedAt >= now) }
        #expect(all.lines[0]["periodType"] == "TRIAL")
        #expect(all.lines[2]["id"] == "CONSUMPTION_REQUEST:5e000000-0000-4000-8000-00000000c001")
        #expect(all.lines[2]["reason"] == "UNINTENDED_PURCHASE")
        #expect(all.lines[2]["deadline"] == .int(now - Self.day + 12 * 3_600_000))

        let limited = try E2E.run(["lifecycle", "--config", config, "--since", "1", "--limit", "1"], in: folder)
        #expect(limited.lines.map { $0["cursor"] } == [2])
        #expect(try E2E.run(["lifecycle", "--config", config, "--since", "3"], in: folder).stdout.isEmpty)
        // Past the last cursor: nothing yet, and a warning.
        let past = try E2E.run(["lifecycle", "--config", config, "--since", "4"], in: folder)
        #expect(past.status == 0 && past.stdout.isEmpty, "\(past.stdout) \(past.stderr)")
        #expect(past.stderr.contains("warning: --since 4 is past the last cursor recorded"), "\(past.stderr)")
        for bad in ["abc", "-1", "1.5"] {
            let run = try E2E.run(["lifecycle", "--config", config, "--since", bad], in: folder)
            #expect(run.status == 2, "--since \(bad): \(run.stdout) \(run.stderr)")
        }
        #expect(try E2E.run(["lifecycle", "--config", config, "--limit", "0"], in: folder).status == 2)
        let help = try E2E.run(["lifecycle", "--help"], in: folder)
        #expect(help.status == 0 && help.stdout.contains("entitlements lifecycle [--db PATH] --config PATH"))
        #expect(try E2E.run(["--help"], in: folder).stdout.contains("entitlements lifecycle"))

        // --follow: an event as it is ingested (auto-renew turned off), then one time
        // brings (a subscription expiring a few seconds from now), each within the bound.
        let output = folder.appendingPathComponent("follow.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let follow = Process()
        follow.executableURL = E2E.binary
        follow.arguments = ["lifecycle", "--config", config, "--since", "3", "--follow"]
        follow.currentDirectoryURL = folder
        follow.standardOutput = try FileHandle(forWritingTo: output)
        try follow.run()
        // SIGKILL: a child of the test runner may start with SIGTERM blocked.
        defer { if follow.isRunning { kill(follow.processIdentifier, SIGKILL) } }
        let soon = Engine.now() + 8_000
        let ending = TestPayloads.transaction(
            transactionId: "2000000000000201", originalTransactionId: "2000000000000201", appTransactionId: "704000000000000002",
            purchaseDate: soon - 30 * Self.day, expiresDate: soon, signedDate: soon - 30 * Self.day)
        let off = TestPayloads.renewalInfo(
            originalTransactionId: "2000000000000201", appTransactionId: "704000000000000002", autoRenewStatus: 0,
            expirationIntent: 1, signedDate: Engine.now() - 1_000)
        try Data(
            [TestPayloads.body(signedTransactionInfo: E2E.pki.sign(ending)), TestPayloads.body(signedRenewalInfo: E2E.pki.sign(off))]
                .joined(separator: "\n").utf8
        ).write(to: input)
        let second = try E2E.run(["ingest", "--config", config, input.path], in: folder)
        #expect(second.status == 0, "\(second.stderr)")
        func followed() -> [JSONValue] {
            (try? String(contentsOf: output, encoding: .utf8))?.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) } ?? []
        }
        let deadline = Date().addingTimeInterval(90)
        while !followed().contains(where: { $0["type"] == "EXPIRATION" }), Date() < deadline { usleep(50_000) }
        let seen = followed()
        #expect(seen.map { $0["type"] } == ["SUBSCRIPTION_STARTED", "AUTO_RENEW_DISABLED", "EXPIRATION"], "\(seen)")
        #expect(seen.last?["id"] == .string("EXPIRATION:2000000000000201:\(soon)"))
        #expect(seen.last?["reason"] == "VOLUNTARY")
        #expect(seen.last?["effectiveAt"] == .int(soon))
        if case .int(let recorded)? = seen.last?["recordedAt"] { #expect(recorded >= soon) }
        #expect(seen[1]["expirationIntent"] == 1)
    }

    /// The feed as an `AsyncSequence`, and its lines through `JSONEncoder`.
    @Test func feedAsAsyncSequence() async throws {
        let engine = try E2E.engine()
        let now = Engine.now()
        let pass = TestPayloads.transaction(
            transactionId: "3000000000000302", originalTransactionId: "3000000000000302", productId: "com.example.pass.week",
            type: "Non-Renewing Subscription", purchaseDate: now - Self.day, expiresDate: nil, signedDate: now - Self.day)
        let reader = Task { () throws -> [LifecycleRecord] in
            var seen: [LifecycleRecord] = []
            for try await record in engine.lifecycleFeed(since: 0, pollInterval: .milliseconds(20)) {
                seen.append(record)
                if seen.count == 1 { break }
            }
            return seen
        }
        _ = try await engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(pass)))])
        let seen = try await reader.value
        #expect(seen.map(\.id) == ["PURCHASE:3000000000000302"])
        #expect(seen.first?.fields["productType"] == "Non-Renewing Subscription")
        #expect(try await engine.lifecycle(since: 0, limit: 10) == seen)
        #expect(try await engine.lastLifecycleCursor() == 1)
        let encoded = try JSONParser().parse(Array(try JSONEncoder().encode(seen[0])))
        #expect(HistoryCommandTests.sorted(encoded) == HistoryCommandTests.sorted(seen[0].json()))
    }
}
