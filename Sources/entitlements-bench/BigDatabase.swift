import AppStoreVerification
import Dispatch
import EntitlementCore
import EventStore
import Foundation
import TestPKI

/// The database of the query and replay figures (100,000 customers, 1,000,000 events
/// by default), built fast: straight through ``EventStore/append(_:rules:rulesJSON:receivedAt:)``
/// with `VerifiedInput` values decoded from the payloads, without signing or verifying.
/// The store trusts its caller to have verified; neither query nor replay reads a
/// signature or a raw JWS (replay reads the compact facts, query the projections), so
/// the figures are those of a log of verified notifications.
///
/// How it differs from a log that real ingest would write, none of which query or
/// replay reads:
/// - the JWS strings stored as `raw` are stand-ins: with `.compact` (the default) a short
///   header without certificate chain, the real payload, a zero signature, and in the
///   notification's payload the nested JWS are short stand-ins too (their decoded
///   payloads, stored as `nested_payloads`, are the real ones). With `.full` every JWS
///   has the corpus's real `x5c` header (then the bytes per event are a real log's, and
///   the database is about 10 times larger);
/// - the log is in customer order (one customer's ten notifications after another),
///   so each batch writes each customer's projection once; replay reads the facts in
///   customer order whatever the log order, and queries read projections by key;
/// - the bulk load runs with `journal_mode = OFF` (one write of each page instead of
///   two), then the database is put back in WAL mode.
enum BigDatabase {
    enum RawHeader: String {
        case compact, full
    }

    struct Built {
        var events: Int
        var customers: Int
        var seconds: Double
    }

    /// - Parameter receivedAt: the time of receipt recorded (and the lifecycle feed's `now`).
    static func build(path: String, plan: HistoryPlan, header: RawHeader, pki: TestPKI, batch: Int = 4_000,
                      receivedAt: Int64 = TestPayloads_january2026, progress: (Int) -> Void) throws -> Built
    {
        Storage.remove(path)
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        try store.rawConnection.execute("PRAGMA journal_mode = OFF")
        try store.rawConnection.execute("PRAGMA cache_size = -65536")
        let maker = InputMaker(plan: plan, header: header, pki: pki)
        let rulesJSON = BenchRules.rulesJSON

        let start = Clock.now()
        let batches = (plan.total + batch - 1) / batch
        var next = try maker.items(0..<min(batch, plan.total))
        var appended = 0
        for number in 0..<batches {
            let current = next
            // Make the next batch on the other core while this one is appended.
            let produced = UnsafeSendableBox<[Result<[AppendItem], BenchFailure>]>([.success([])])
            let group = DispatchGroup()
            if number + 1 < batches {
                let range = (number + 1) * batch..<min((number + 2) * batch, plan.total)
                DispatchQueue.global().async(group: group) {
                    do { produced.set(0, Result<[AppendItem], BenchFailure>.success(try maker.items(range))) } catch {
                        produced.set(0, Result<[AppendItem], BenchFailure>.failure(error as? BenchFailure ?? BenchFailure("\(error)")))
                    }
                }
            }
            for outcome in try store.append(current, rules: BenchRules.rules, rulesJSON: rulesJSON, receivedAt: receivedAt) {
                guard case .appended = outcome else { throw BenchFailure("building the database: an event was not appended: \(outcome)") }
                appended += 1
            }
            group.wait()
            next = try produced.value[0].get()
            progress(appended)
        }
        let journal = try store.rawConnection.scalarString("PRAGMA journal_mode = WAL")
        guard journal?.lowercased() == "wal" else { throw BenchFailure("the database refused to return to WAL mode") }
        return Built(events: appended, customers: plan.customersPresent, seconds: Clock.now() - start)
    }

    /// Makes verified inputs from the plan's payloads, with stand-in JWS strings.
    struct InputMaker: Sendable {
        var plan: HistoryPlan
        var full: Bool
        var headerSegment: String
        var signatureSegment: String

        init(plan: HistoryPlan, header: RawHeader, pki: TestPKI) {
            self.plan = plan
            full = header == .full
            let headerJSON: JSONValue = full ? pki.header() : ["alg": "ES256", "kid": "bench"]
            headerSegment = Base64Encoding.url(Array(JSONWriter.string(headerJSON).utf8))
            signatureSegment = Base64Encoding.url([UInt8](repeating: 0, count: 64))
        }

        func jws(_ payload: JSONValue) -> String {
            headerSegment + "." + Base64Encoding.url(Array(JSONWriter.string(payload).utf8)) + "." + signatureSegment
        }

        /// A nested JWS as it appears in the notification's payload.
        func nestedJWS(_ payload: JSONValue, _ kind: String, _ id: String, _ signedDate: Int64) -> String {
            full ? jws(payload) : headerSegment + "." + Base64Encoding.url("\(kind):\(id):\(signedDate)") + "." + signatureSegment
        }

        func items(_ range: Range<Int>) throws -> [AppendItem] {
            var items: [AppendItem] = []
            items.reserveCapacity(range.count)
            for index in range {
                let (c, k) = plan.position(index)
                let payloads = plan.payloads(customer: c, event: k)
                do {
                    let transaction = try TransactionPayload(json: payloads.transaction)
                    let renewal = try RenewalInfoPayload(json: payloads.renewal)
                    let transactionJWS = full ? jws(payloads.transaction) : nestedJWS(payloads.transaction, "transaction", transaction.transactionId, transaction.signedDate)
                    let renewalJWS = full ? jws(payloads.renewal) : nestedJWS(payloads.renewal, "renewalInfo", renewal.originalTransactionId, renewal.signedDate)
                    let notificationJSON = payloads.notification(transactionJWS, renewalJWS)
                    let notification = SignedNotification(
                        jws: jws(notificationJSON), payload: try NotificationPayload(json: notificationJSON),
                        transaction: SignedTransaction(jws: transactionJWS, payload: transaction),
                        renewalInfo: SignedRenewalInfo(jws: renewalJWS, payload: renewal))
                    items.append(.verified(.notification(notification)))
                } catch {
                    throw BenchFailure("a planned payload does not decode: \(error)")
                }
            }
            return items
        }
    }
}
