import EntitlementCore
import Entitlements
import EventStore
import Foundation
import SchemaMigrations
import TestPKI
import Testing
import TestSupport

/// Specification section 5, "Who the customer is", end to end: objects of an
/// originalTransactionId linked to nothing form the customer `otid:<X>`; a
/// link merges them into the appTransactionId, `otid:<X>` answering as its
/// alias; conflicting links are decided by the latest-signed object.
@Suite struct CustomerLinkTests {
    let t0 = TestPayloads.january2025
    let day: Int64 = 86_400_000
    let app = "704000000000000001"
    let other = "704000000000000002"
    let unlock = "2000000000000701"
    let subscription = "2000000000000702"

    func lifetime(app: String?, signed: Int64, revoked: Int64? = nil) -> String {
        TestPayloads.body(
            signedTransactionInfo: E2E.pki.sign(
                TestPayloads.transaction(
                    transactionId: unlock, originalTransactionId: unlock, appTransactionId: app, productId: "com.example.lifetime",
                    type: "Non-Consumable", purchaseDate: t0 - 700 * day, expiresDate: nil, signedDate: signed, revocationDate: revoked,
                    revocationType: revoked == nil ? nil : "REFUND_FULL", revocationReason: revoked == nil ? nil : 0)))
    }

    func monthly(app: String?, signed: Int64) -> String {
        TestPayloads.body(
            signedTransactionInfo: E2E.pki.sign(
                TestPayloads.transaction(
                    transactionId: subscription, originalTransactionId: subscription, appTransactionId: app,
                    productId: "com.example.pro.monthly", purchaseDate: t0, expiresDate: t0 + 30 * day, signedDate: signed)))
    }

    func view(_ engine: Engine, _ query: CustomerQuery, at: Int64? = nil) throws -> CustomerView? {
        if case .customer(let view) = try engine.query(query, at: at ?? t0 + day) { return view }
        return nil
    }

    @Test func anOldPurchaseJoinsTheCustomerWhenItsLinkArrivesAndOtidAnswersAsAnAlias() throws {
        let engine = try E2E.engine()
        let first = try engine.ingest([InputBytes(lifetime(app: nil, signed: t0 - 700 * day)), InputBytes(monthly(app: app, signed: t0))])
        #expect(first.map(\.appTransactionId) == ["otid:" + unlock, app])
        // Two customers until the link arrives.
        #expect(try view(engine, .appTransactionId(app))?.purchases.isEmpty == true)
        #expect(try view(engine, .appTransactionId("otid:" + unlock))?.appTransactionId == "otid:" + unlock)
        // Apple's API re-signs the old unlock with its appTransactionId: the link.
        let link = try engine.ingest([InputBytes(lifetime(app: app, signed: t0 + 5))])
        #expect(link.map(\.appTransactionId) == [app])
        for query in [
            CustomerQuery.appTransactionId(app), .appTransactionId("otid:" + unlock), .originalTransactionId(unlock),
            .originalTransactionId(subscription), .transactionId(unlock), .transactionId(subscription),
        ] {
            let answer = try view(engine, query)
            #expect(answer?.appTransactionId == app, "\(query)")
            #expect(answer?.purchases.map(\.transactionId) == [unlock], "\(query)")
            #expect(answer?.subscriptions.map(\.originalTransactionId) == [subscription], "\(query)")
        }
        #expect(try engine.state(of: "otid:" + unlock) == nil)
        // The old object again (a duplicate) now reports the customer it belongs to.
        #expect(try engine.ingest([InputBytes(lifetime(app: nil, signed: t0 - 700 * day))]).map(\.appTransactionId) == [app])
        // The issue's case: after a refund, otid:X no longer answers "pro active".
        _ = try engine.ingest([InputBytes(lifetime(app: nil, signed: t0 + 9, revoked: t0 + 8))])
        let refunded = try view(engine, .appTransactionId("otid:" + unlock), at: t0 + 40 * day)
        #expect(refunded?.appTransactionId == app)
        #expect(refunded?.entitlement("pro")?.active == false)
        #expect(try view(engine, .transactionId("2000000000000999")) == nil)
        #expect(try engine.query(.transactionId("2000000000000999")).json()["error"]?["code"] == "NOT_FOUND")
    }

    @Test func theLinkGivesTheSameCustomersFirstLastInTheMiddleAndTwiceInAnyOrder() throws {
        let documents = [
            lifetime(app: nil, signed: t0 - 700 * day), lifetime(app: app, signed: t0 + 1), lifetime(app: nil, signed: t0 + 2),
            lifetime(app: app, signed: t0 + 3), monthly(app: nil, signed: t0), monthly(app: app, signed: t0 + 4),
        ]
        let reference = try E2E.engine()
        _ = try reference.ingest(documents.map(InputBytes.init))
        let expected = try view(reference, .appTransactionId(app))
        #expect(expected?.purchases.count == 1 && expected?.subscriptions.count == 1)
        var random = SplitMix64(seed: 12)
        for _ in 0..<6 {
            var order = documents + documents.filter { _ in random.int(0..<3) == 0 }
            random.shuffle(&order)
            let engine = try E2E.engine()
            for document in order { _ = try engine.ingest([InputBytes(document)]) }
            #expect(try view(engine, .appTransactionId(app)) == expected)
            #expect(try engine.state(of: app) == reference.state(of: app))
            #expect(try engine.state(of: "otid:" + unlock) == nil)
            #expect(try engine.replay().changed == 0)
            #expect(try view(engine, .appTransactionId(app)) == expected)
        }
    }

    @Test func conflictingLinksAreDecidedByTheLatestSignedObjectAndNothingIsGrantedTwice() throws {
        let engine = try E2E.engine()
        _ = try engine.ingest([InputBytes(lifetime(app: app, signed: t0)), InputBytes(monthly(app: other, signed: t0))])
        #expect(try view(engine, .appTransactionId(app))?.purchases.count == 1)
        // A later-signed object links the unlock to the other customer: it moves there.
        _ = try engine.ingest([InputBytes(lifetime(app: other, signed: t0 + 10))])
        #expect(try view(engine, .appTransactionId(app)) == nil)
        #expect(try view(engine, .appTransactionId(other))?.purchases.map(\.transactionId) == [unlock])
        #expect(try view(engine, .originalTransactionId(unlock))?.appTransactionId == other)
        // An earlier-signed claim arriving late changes nothing.
        _ = try engine.ingest([InputBytes(lifetime(app: app, signed: t0 + 5))])
        #expect(try view(engine, .originalTransactionId(unlock))?.appTransactionId == other)
        // And a still later one moves it back, whole.
        _ = try engine.ingest([InputBytes(lifetime(app: app, signed: t0 + 20))])
        #expect(try view(engine, .appTransactionId(app))?.purchases.map(\.transactionId) == [unlock])
        #expect(try view(engine, .appTransactionId(other))?.purchases.isEmpty == true)
        #expect(try engine.replay().changed == 0)
        #expect(try view(engine, .appTransactionId(app))?.purchases.map(\.transactionId) == [unlock])
    }

    @Test func claimsSignedInTheSameMillisecondAreDecidedByTheGreaterRawInAnyOrder() throws {
        let a = lifetime(app: app, signed: t0 + 10)
        let b = lifetime(app: other, signed: t0 + 10)
        func raw(_ body: String) -> String {
            guard case .string(let jws)? = try? JSONParser().parse(body)["signedTransactionInfo"] else { return "" }
            return jws
        }
        let winner = raw(a).utf8.lexicographicallyPrecedes(raw(b).utf8) ? other : app
        for order in [[a, b], [b, a]] {
            let engine = try E2E.engine()
            for document in order { _ = try engine.ingest([InputBytes(document)]) }
            #expect(try view(engine, .originalTransactionId(unlock))?.appTransactionId == winner)
            #expect(try engine.replay().changed == 0)
            #expect(try view(engine, .transactionId(unlock))?.appTransactionId == winner)
        }
    }

    @Test func aDatabaseMadeBeforeLinksMergesItsOtidCustomersOnItsFirstCommand() throws {
        let path = E2E.folder().appendingPathComponent("before-links.sqlite").path
        // The log as the previous schema (001-005) and its ingest left it: facts and
        // projections under each event's own key, otid:X apart from the appTransactionId.
        let verifier = try DocumentVerifier(configuration: E2E.configuration())
        var inputs: [VerifiedInput] = []
        for document in [lifetime(app: nil, signed: t0 - 700 * day), monthly(app: app, signed: t0), lifetime(app: app, signed: t0 + 5)] {
            for item in verifier.verifiedItems(InputBytes(document)) {
                guard case .verified(let input) = item else { Issue.record("fixture does not verify"); return }
                inputs.append(input)
            }
        }
        do {
            let connection = try Connection(path: path, mode: .readWrite)
            try Migrator.migrate(connection, migrations: SchemaMigrations.migrations.filter { $0.identifier < "006" })
            var states: [CustomerKey: CustomerState] = [:]
            for (index, input) in inputs.enumerated() {
                let event = Event(seq: Int64(index + 1), input: input)
                let key = event.customerKey!
                let insert = try connection.prepare(
                    """
                    INSERT INTO events (seq, identity, kind, event_id, customer_key, app_transaction_id, original_transaction_id,
                        transaction_id, signed_date, received_at, payload, raw, prev_hash, hash)
                    VALUES (?, ?, 'transaction', ?, ?, ?, ?, ?, ?, 0, '{}', ?, x'00', x'00')
                    """)
                try insert.bind(1, event.seq)
                try insert.bind(2, "transaction:\(event.transactionId!):\(event.signedDate)")
                try insert.bind(3, event.transactionId!)
                try insert.bind(4, key)
                try insert.bind(5, key.hasPrefix("otid:") ? nil : key)
                try insert.bind(6, event.originalTransactionId)
                try insert.bind(7, event.transactionId)
                try insert.bind(8, event.signedDate)
                try insert.bind(9, input.jws)
                try insert.step()
                let facts = try connection.prepare("INSERT INTO event_facts (customer_key, seq, facts) VALUES (?, ?, ?)")
                try facts.bind(1, key)
                try facts.bind(2, event.seq)
                try facts.bind(3, blob: EventCodec.encode(event))
                try facts.step()
                try states[key, default: CustomerState(key: key)].apply(event, rules: E2E.rules)
            }
            for (key, state) in states {
                let projection = try connection.prepare(
                    "INSERT INTO projections (generation, customer_key, rules_version, last_event_seq, state) VALUES (1, ?, 'e2e-1', 3, ?)")
                try projection.bind(1, key)
                try projection.bind(2, blob: StateCodec.encode(state))
                try projection.step()
            }
            #expect(states.keys.sorted() == [app, "otid:" + unlock])
        }
        let engine = try E2E.engine(path: path)
        let merged = try view(engine, .appTransactionId(app))
        #expect(merged?.purchases.map(\.transactionId) == [unlock])
        #expect(merged?.subscriptions.map(\.originalTransactionId) == [subscription])
        #expect(try view(engine, .appTransactionId("otid:" + unlock))?.appTransactionId == app)
        #expect(try engine.state(of: "otid:" + unlock) == nil)
        let store = try EventStore(path: path, hash: { _ in [] })
        #expect(try store.identityRebuildPending() == false)
    }

    @Test func theCommandLineAnswersTheWholeCustomerByAnyOfItsIds() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let db = folder.appendingPathComponent("cli.sqlite").path
        let lines = [lifetime(app: nil, signed: t0 - 700 * day), monthly(app: app, signed: t0), lifetime(app: app, signed: t0 + 5)]
        let ingest = try E2E.run(["ingest", "--db", db, "--config", config], stdin: lines.joined(separator: "\n") + "\n")
        #expect(ingest.status == 0)
        #expect(ingest.lines.last?["appTransactionId"] == .string(app))
        for selector in [
            ["--transaction-id", unlock], ["--original-transaction-id", unlock], ["--app-transaction-id", "otid:" + unlock],
            ["--original-transaction-id", subscription],
        ] {
            let run = try E2E.run(["query", "--db", db, "--config", config, "--at", String(t0 + day)] + selector)
            #expect(run.status == 0, "\(selector) \(run.stderr)")
            #expect(run.lines.first?["appTransactionId"] == .string(app), "\(selector)")
            #expect(run.lines.first?["purchases"]?.arrayCount == 1)
        }
        let unknown = try E2E.run(["query", "--db", db, "--config", config, "--transaction-id", "1"])
        #expect(unknown.status == 1)
    }
}

