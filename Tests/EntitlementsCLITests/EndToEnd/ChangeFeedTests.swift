import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// The change feed (specification section 8), through the library and the command line.
@Suite struct ChangeFeedTests {
    static let day: Int64 = 86_400_000

    /// Each customer's active entitlements, folded from the feed in cursor order.
    static func fold(_ records: [ChangeRecord]) -> [String: [String: Int64?]] {
        var answers: [String: [String: Int64?]] = [:]
        for record in records {
            if record.active {
                answers[record.appTransactionId, default: [:]][record.entitlement] = .some(record.expiresDate)
            } else {
                answers[record.appTransactionId, default: [:]][record.entitlement] = nil
            }
        }
        return answers.filter { !$0.value.isEmpty }
    }

    /// What `query` answers for each customer at `at` (an `otid:` key merged into
    /// an appTransactionId answers as that customer: not under its own key).
    static func answers(_ engine: Engine, customers: [String], at: Int64?) throws -> [String: [String: Int64?]] {
        var answers: [String: [String: Int64?]] = [:]
        for key in customers {
            guard case .customer(let view) = try engine.query(.appTransactionId(key), at: at), view.appTransactionId == key else { continue }
            let active = ReportedAnswer(view).active
            if !active.isEmpty { answers[key] = active }
        }
        return answers
    }

    static let customers = (0..<4).map { "70400000000000\(1000 + $0)" }

    /// The property of section 8: for randomized histories ingested in random
    /// batches (with duplicates), each customer's changes read from cursor 0 end
    /// in exactly what `query` answers, after every batch and at the end; a
    /// replay of the same events records nothing.
    @Test(arguments: PropertySeeds.seeds([21, 22, 23, 24, 25]))
    func changesFromTheStartEndInWhatQueryAnswers(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        var documents = ReplayEqualsIngestTests.history(seed: seed)
        documents += documents.filter { _ in random.int(0..<4) == 0 }
        random.shuffle(&documents)
        let engine = try E2E.engine()
        var clock = TestPayloads.january2025 - Self.day
        var index = 0
        while index < documents.count {
            let count = random.int(1..<9)
            let batch = documents[index..<min(documents.count, index + count)]
            index += count
            _ = try engine.ingest(batch.map(InputBytes.init), receivedAt: clock)
            try engine.recordDueChanges(now: clock)
            let feed = Self.fold(try engine.changes(since: 0, recordingDueAt: clock))
            let known = Set(Self.customers).union(try engine.changes(since: 0, recordingDueAt: clock).map(\.appTransactionId)).sorted()
            let answers = try Self.answers(engine, customers: known, at: clock)
            #expect(feed == answers, "after the batch received at \(clock): feed \(feed), query \(answers)")
            clock += Int64(random.int(0..<12)) * Self.day + Int64(random.int(0..<86_400_000))
        }
        // Now: every expiry since is recorded before the feed is read.
        let all = try engine.changes()
        let everyone = Set(Self.customers).union(all.map(\.appTransactionId)).sorted()
        #expect(Self.fold(all) == (try Self.answers(engine, customers: everyone, at: nil)))
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
        // Time ended something in this seed's history: true of the suite's seeds, not of every soak seed.
        if PropertySeeds.isTheSuites(seed) { #expect(all.contains { $0.cause == .time }) }
        #expect(all.allSatisfy { $0.effectiveAt <= $0.recordedAt })
        // Reading again records nothing; nor does replaying the same events.
        #expect(try engine.changes() == all)
        _ = try engine.replay()
        #expect(try engine.changes() == all)
    }

    /// A replay under changed rules records the differences with cause `rules`.
    @Test func replayUnderNewRulesRecordsRules() throws {
        let path = E2E.folder().appendingPathComponent("rules.sqlite").path
        let now = Engine.now()
        let first = try E2E.engine(path: path)
        let lifetime = TestPayloads.transaction(
            transactionId: "3000000000000001", originalTransactionId: "3000000000000001", productId: "com.example.lifetime",
            type: "Non-Consumable", purchaseDate: now - Self.day, expiresDate: nil, signedDate: now - Self.day)
        _ = try first.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(lifetime)))])
        let gained = try first.changes()
        #expect(gained.map(\.entitlement) == ["pro"])
        #expect(gained[0].cause == .event)
        #expect(gained[0].active && gained[0].expiresDate == nil)
        #expect(gained[0].effectiveAt == now - Self.day)

        var rules = E2E.rules
        rules.version = "e2e-2"
        rules.products["com.example.lifetime"] = ProductRule(entitlements: ["lifetime"])
        let second = try E2E.engine(rules: rules, path: path)
        _ = try second.replay()
        let after = try second.changes(since: gained[0].cursor)
        #expect(after.map(\.entitlement) == ["lifetime", "pro"])
        #expect(after.allSatisfy { $0.cause == .rules })
        #expect(after.map(\.active) == [true, false])
        _ = try second.replay()
        #expect(try second.changes(since: gained[0].cursor) == after)
    }

    /// A customer known only by its originalTransactionId merges into its
    /// appTransactionId when a link arrives: its entitlements are reported
    /// inactive under `otid:`, the survivor's active under its own key, cause `merge`.
    @Test func mergeIsRecordedAsMerge() throws {
        let engine = try E2E.engine()
        let now = Engine.now()
        let legacy = TestPayloads.transaction(
            transactionId: "2000000000000201", originalTransactionId: "2000000000000201", appTransactionId: nil,
            purchaseDate: now - Self.day, expiresDate: now + 29 * Self.day, signedDate: now - Self.day)
        _ = try engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(legacy)))])
        let first = try engine.changes()
        #expect(first.map(\.appTransactionId) == ["otid:2000000000000201"])
        let linked = TestPayloads.renewalInfo(
            originalTransactionId: "2000000000000201", appTransactionId: "704000000000000077", signedDate: now - 1_000)
        _ = try engine.ingest([InputBytes(TestPayloads.body(signedRenewalInfo: E2E.pki.sign(linked)))])
        let merged = try engine.changes(since: first[0].cursor)
        #expect(merged.map(\.appTransactionId) == ["otid:2000000000000201", "704000000000000077"])
        #expect(merged.map(\.active) == [false, true])
        #expect(merged.allSatisfy { $0.cause == .merge })
        #expect(merged.last?.expiresDate == now + 29 * Self.day)
        #expect(Self.fold(try engine.changes()) == ["704000000000000077": ["pro": .some(now + 29 * Self.day)]])
    }

    /// The feed as an `AsyncSequence`: it yields what is recorded after it started.
    @Test func feedAsAsyncSequence() async throws {
        let engine = try E2E.engine()
        let now = Engine.now()
        let pass = TestPayloads.transaction(
            transactionId: "3000000000000002", originalTransactionId: "3000000000000002", productId: "com.example.pass.week",
            type: "Non-Renewing Subscription", purchaseDate: now - Self.day, expiresDate: nil, signedDate: now - Self.day)
        let reader = Task { () throws -> [ChangeRecord] in
            var seen: [ChangeRecord] = []
            for try await record in engine.changeFeed(since: 0, pollInterval: .milliseconds(20)) {
                seen.append(record)
                if seen.count == 1 { break }
            }
            return seen
        }
        _ = try await engine.ingest([InputBytes(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(pass)))])
        let seen = try await reader.value
        #expect(seen.count == 1)
        #expect(seen.first?.entitlement == "pro")
        #expect(seen.first?.expiresDate == now + 6 * Self.day)
        let encoded = try JSONParser().parse(Array(try JSONEncoder().encode(seen[0])))
        #expect(HistoryCommandTests.sorted(encoded) == HistoryCommandTests.sorted(seen[0].json()))
    }

    /// The command line: bad cursors, --limit, --follow with an event and with an expiry.
    @Test func commandLine() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let now = Engine.now()
        let monthly = TestPayloads.transaction(
            transactionId: "2000000000000101", originalTransactionId: "2000000000000101", purchaseDate: now - Self.day,
            expiresDate: now + 29 * Self.day, signedDate: now - Self.day)
        let input = folder.appendingPathComponent("in.ndjson")
        try Data(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(monthly)).utf8).write(to: input)
        let missing = try E2E.run(["changes", "--config", config], in: folder)
        #expect(missing.status != 0)
        _ = try E2E.run(["ingest", "--config", config, input.path], in: folder)

        let all = try E2E.run(["changes", "--config", config], in: folder)
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.lines.count == 1)
        #expect(all.lines.first?["cursor"] == 1)
        #expect(all.lines.first?["appTransactionId"] == "704000000000000001")
        #expect(all.lines.first?["entitlement"] == "pro")
        #expect(all.lines.first?["active"] == true)
        #expect(all.lines.first?["expiresDate"] == .int(now + 29 * Self.day))
        #expect(all.lines.first?["effectiveAt"] == .int(now - Self.day))
        #expect(all.lines.first?["cause"] == "event")
        #expect(all.lines.first.map { JSONWriter.string($0) }?.hasPrefix(#"{"cursor":1,"appTransactionId":"704000000000000001","entitlement":"pro","active":true,"expiresDate":"#) == true)

        #expect(try E2E.run(["changes", "--config", config, "--since", "1"], in: folder).stdout.isEmpty)
        // Past the last cursor: nothing yet, and a warning.
        let past = try E2E.run(["changes", "--config", config, "--since", "2"], in: folder)
        #expect(past.status == 0 && past.stdout.isEmpty, "\(past.stdout) \(past.stderr)")
        #expect(past.stderr.contains("warning: --since 2 is past the last cursor recorded"), "\(past.stderr)")
        for bad in ["abc", "-1", "1.5"] {
            let run = try E2E.run(["changes", "--config", config, "--since", bad], in: folder)
            #expect(run.status == 2, "--since \(bad): \(run.stdout) \(run.stderr)")
        }
        #expect(try E2E.run(["changes", "--config", config, "--limit", "0"], in: folder).status == 2)

        // --follow: a change caused by an event, then one caused by time (a pass
        // bought 7 days minus ten seconds ago), each printed within the bound.
        let output = folder.appendingPathComponent("follow.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let follow = Process()
        follow.executableURL = E2E.binary
        follow.arguments = ["changes", "--config", config, "--since", "1", "--follow"]
        follow.currentDirectoryURL = folder
        follow.standardOutput = try FileHandle(forWritingTo: output)
        try follow.run()
        // SIGKILL: a child of the test runner may start with SIGTERM blocked.
        defer { if follow.isRunning { kill(follow.processIdentifier, SIGKILL) } }
        let bought = Engine.now() - 7 * Self.day + 10_000
        let pass = TestPayloads.transaction(
            transactionId: "3000000000000003", originalTransactionId: "3000000000000003", appTransactionId: "704000000000000002",
            productId: "com.example.pass.week", type: "Non-Renewing Subscription", purchaseDate: bought, expiresDate: nil,
            signedDate: bought)
        try Data(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(pass)).utf8).write(to: input)
        _ = try E2E.run(["ingest", "--config", config, input.path], in: folder)
        func lines() -> [JSONValue] {
            (try? String(contentsOf: output, encoding: .utf8))?.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) } ?? []
        }
        let deadline = Date().addingTimeInterval(60)
        while lines().count < 2, Date() < deadline { usleep(50_000) }
        let followed = lines()
        #expect(followed.count == 2, "\(followed)")
        #expect(followed.first?["cause"] == "event")
        #expect(followed.first?["active"] == true)
        #expect(followed.last?["cause"] == "time")
        #expect(followed.last?["active"] == false)
        #expect(followed.last?["effectiveAt"] == .int(bought + 7 * Self.day))
        if case .int(let recorded)? = followed.last?["recordedAt"] {
            #expect(recorded >= bought + 7 * Self.day)
        }
    }
}
