import AppStoreVerification
import EntitlementCore
@testable import Entitlements
import EventStore
import Foundation
import Testing
import TestPKI
import TestSupport

/// A batch verified with its signature checks put off and made at once
/// (``DeferredSignatures``) gives every document exactly the items verifying it alone
/// gives: valid histories, the hostile corpus, and signatures altered where deferring
/// could hide them (the outer one, a nested one, one over a payload that is also not JSON).
@Suite struct DeferredVerificationTests {
    static func verifier(keyTableAfter: Int?) throws -> DocumentVerifier {
        let workspace = try Workspace(name: "deferred", maxInputBytes: HostileCorpus.maxInputBytes)
        var configuration = try EngineConfiguration.load(path: workspace.configPath)
        configuration.keyTableAfter = keyTableAfter
        return try DocumentVerifier(configuration: configuration)
    }

    /// What an item says, comparable.
    static func describe(_ item: AppendItem) -> String {
        switch item {
        case .verified(let input): return "verified \(input.kind.rawValue) \(input.jws.hashValue) \(String(describing: input.decodedJSON).hashValue)"
        case .rejected(let rejection): return "rejected \(rejection.code) \(rejection.message) \(rejection.raw.hashValue) \(rejection.size)"
        }
    }

    /// A JWS with one character of its `segment` (0 header, 1 payload, 2 signature) changed.
    static func altered(_ jws: String, segment: Int, at offset: Int = 10) -> String {
        var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
        let index = offset % parts[segment].count
        parts[segment][index] = parts[segment][index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return parts.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
    }

    /// Signed data where putting checks off could hide a failure: a notification whole, with
    /// its own, a nested or the renewal's signature altered, its payload altered, a payload
    /// that is not JSON under another's signature; a transaction and renewal info, whole and altered.
    struct SignedCases {
        let transaction: String, renewal: String, notification: String
        let nestedAltered: String, renewalAltered: String, notJSON: String

        init() {
            let pki = Scenario.pki
            transaction = pki.sign(TestPayloads.transaction(transactionId: "5550001"))
            renewal = pki.sign(TestPayloads.renewalInfo())
            notification = pki.sign(TestPayloads.notification(
                type: "DID_RENEW", signedTransactionInfo: transaction, signedRenewalInfo: renewal))
            nestedAltered = pki.sign(TestPayloads.notification(
                type: "DID_RENEW", signedTransactionInfo: altered(transaction, segment: 2), signedRenewalInfo: renewal))
            renewalAltered = pki.sign(TestPayloads.notification(
                type: "DID_RENEW", signedTransactionInfo: transaction, signedRenewalInfo: altered(renewal, segment: 2, at: 40)))
            // A payload that is not JSON under the signature of another: the signature fails first.
            var parts = notification.split(separator: ".").map(String.init)
            parts[1] = Base64Encoding.url("not json")
            notJSON = parts.joined(separator: ".")
        }

        /// Every case as a bare JWS.
        var all: [String] {
            [
                notification, altered(notification, segment: 2), altered(notification, segment: 1, at: 30), nestedAltered,
                renewalAltered, notJSON, transaction, altered(transaction, segment: 2, at: 3), renewal, altered(renewal, segment: 2, at: 7),
            ]
        }
    }

    static func documents() -> [InputBytes] {
        let history = History.generate(lines: 48, seed: 0xDEF)
        let cases = SignedCases()
        let (transaction, renewal, notification) = (cases.transaction, cases.renewal, cases.notification)
        let (nestedAltered, renewalAltered, notJSON) = (cases.nestedAltered, cases.renewalAltered, cases.notJSON)
        var texts = history.lines.map(\.text)
        let crafted = [
            TestPayloads.body(signedPayload: notification),
            TestPayloads.body(signedPayload: altered(notification, segment: 2)),
            TestPayloads.body(signedPayload: altered(notification, segment: 1, at: 30)),
            TestPayloads.body(signedPayload: nestedAltered),
            TestPayloads.body(signedPayload: renewalAltered),
            TestPayloads.body(signedPayload: notJSON),
            TestPayloads.body(signedTransactionInfo: altered(transaction, segment: 2, at: 3)),
            altered(renewal, segment: 2, at: 7),
        ]
        for (offset, text) in crafted.enumerated() { texts.insert(text, at: min(texts.count, offset * 6 + 1)) }
        var documents = texts.map { InputBytes(bytes: Array($0.utf8)) }
        let corpus = HostileCorpus.build(pki: Scenario.pki).filter { $0.environment == "Sandbox" && !$0.isHuge }
        for (offset, item) in corpus.enumerated() {
            documents.insert(InputBytes(bytes: item.input), at: min(documents.count, offset * 2 + 3))
        }
        return documents
    }

    @Test("deferred checks: the items of verifying each document alone, whatever the batch")
    func deferredEqualsOneByOne() throws {
        let documents = Self.documents()
        let withTables = try Self.verifier(keyTableAfter: 0)
        let reference = try Self.verifier(keyTableAfter: nil)
        // Each document alone, without tables: the answer to give.
        let expected = documents.map { reference.verifiedItems($0).map(Self.describe) }
        let deferred = DeferredSignatures()
        for size in [documents.count, 1, 5, 16] {
            var start = 0
            while start < documents.count {
                let batch = Array(documents[start..<min(start + size, documents.count)])
                let verified = Engine.VerifiedBatch(batch, verifier: withTables, deferring: deferred)
                #expect(verified.counts == expected[start..<(start + batch.count)].map(\.count), "batch of \(size) at \(start)")
                #expect(verified.items.map(Self.describe) == expected[start..<(start + batch.count)].flatMap { $0 }, "batch of \(size) at \(start)")
                #expect(deferred.count == 0)
                start += size
            }
        }
        // One document a call, through the public API, which checks its signatures together.
        for (index, document) in documents.enumerated() {
            #expect(withTables.verifiedItems(document).map(Self.describe) == expected[index], "document \(index)")
        }
        #expect(withTables.verifier.keyTableCount >= 1, "the tables were never used")
        #expect(expected.joined().contains { $0.hasPrefix("rejected VERIFICATION_FAILURE") })
        #expect(expected.joined().filter { $0.hasPrefix("verified") }.count >= 48)
    }

    @Test("a verifier's own verifyNotification and verify check a JWS's signatures together and answer as checking each at once does")
    func verifierChecksTogether() throws {
        let withTables = try Self.verifier(keyTableAfter: 0).verifier
        let reference = try Self.verifier(keyTableAfter: nil).verifier
        func describe(_ verify: () throws(VerificationError) -> VerifiedInput) -> String {
            do {
                return Self.describe(.verified(try verify()))
            } catch {
                return "rejected \(error.code.rawValue) \(error.message)"
            }
        }
        var rejected = 0
        for jws in SignedCases().all {
            let expected = describe { () throws(VerificationError) in try reference.verify(jws) }
            if expected.hasPrefix("rejected") { rejected += 1 }
            // Twice: the second time with the key's table built by the first.
            for _ in 0..<2 {
                #expect(describe { () throws(VerificationError) in try withTables.verify(jws) } == expected)
                #expect(
                    describe { () throws(VerificationError) in .notification(try withTables.verifyNotification(jws)) }
                        == describe { () throws(VerificationError) in .notification(try reference.verifyNotification(jws)) })
            }
        }
        #expect(rejected >= 6)
        #expect(withTables.keyTableCount >= 1, "the tables were never used")
    }

    @Test("an engine whose keys use tables from the first signature ingests what one without tables does")
    func engineWithTablesIngestsTheSame() throws {
        let workspace = try Workspace(name: "deferred-engine", maxInputBytes: HostileCorpus.maxInputBytes)
        let documents = Self.documents()
        var results: [[IngestResult]] = []
        for (name, keyTableAfter) in [("tables.sqlite", 0 as Int?), ("plain.sqlite", nil)] {
            var configuration = try EngineConfiguration.load(path: workspace.configPath)
            configuration.keyTableAfter = keyTableAfter
            let engine = try Engine(configuration: configuration, databasePath: workspace.path(name))
            var batches = stride(from: 0, to: documents.count, by: 7).map { Array(documents[$0..<min($0 + 7, documents.count)]) }
            var delivered: [IngestResult] = []
            try engine.ingest(batches: { batches.isEmpty ? nil : batches.removeFirst() }, workers: 2) { delivered += $0 }
            results.append(delivered)
        }
        #expect(results[0] == results[1])
        let tables = try Probe(workspace.path("tables.sqlite"))
        let plain = try Probe(workspace.path("plain.sqlite"))
        #expect(try tables.identities() == plain.identities())
        #expect(try tables.quarantineCount() == plain.quarantineCount())
    }

    @Test("Engine.ingest of a batch, on one thread or several, ingests what verifying each document alone does")
    func batchIngestOnSeveralThreads() throws {
        let workspace = try Workspace(name: "deferred-batches", maxInputBytes: HostileCorpus.maxInputBytes)
        let documents = Self.documents()
        // The reference first: no tables (every check made at once), one document a call.
        let runs: [(name: String, keyTableAfter: Int?, workers: Int, size: Int)] = [
            ("plain.sqlite", nil, 1, 1), ("single.sqlite", 0, 2, 1), ("one-lane.sqlite", 0, 1, 9),
            ("two-lanes.sqlite", 0, 2, 9), ("three-lanes.sqlite", 0, 3, documents.count),
        ]
        var results: [[IngestResult]] = []
        for run in runs {
            var configuration = try EngineConfiguration.load(path: workspace.configPath)
            configuration.keyTableAfter = run.keyTableAfter
            let engine = try Engine(configuration: configuration, databasePath: workspace.path(run.name))
            var delivered: [IngestResult] = []
            for start in stride(from: 0, to: documents.count, by: run.size) {
                let batch = Array(documents[start..<min(start + run.size, documents.count)])
                var batchResults = try engine.ingest(batch, workers: run.workers)
                // Each result's document number is its place in its batch: made the corpus's.
                for index in batchResults.indices { batchResults[index].input = batchResults[index].input.map { $0 + start } }
                delivered += batchResults
            }
            results.append(delivered)
        }
        #expect(results[0].contains { $0.outcome == .rejected }, "the corpus holds rejections")
        #expect(results[0].filter { $0.outcome == .appended }.count >= 48)
        let reference = try Probe(workspace.path(runs[0].name))
        for (index, run) in runs.enumerated().dropFirst() {
            // The first result that differs, named, rather than two arrays of hundreds.
            #expect(results[index].count == results[0].count, "\(run.name)")
            let differing = results[index].indices.first { $0 >= results[0].count || results[index][$0] != results[0][$0] }
            #expect(differing == nil, "\(run.name): result \(differing ?? 0) is \(differing.map { String(describing: results[index][$0]) } ?? "")")
            let probe = try Probe(workspace.path(run.name))
            #expect(try probe.identities() == reference.identities(), "\(run.name)")
            #expect(try probe.quarantineCount() == reference.quarantineCount(), "\(run.name)")
        }
    }
}
