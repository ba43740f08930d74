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
/// signature, so the figures are those of a log of verified notifications.
///
/// The JWS strings stored as `raw` are stand-ins: the real header shape and the real
/// payload, with the signature segment zero. With `rawHeader: .compact` the header
/// carries no certificate chain (a short `kid` instead), which keeps a million-event
/// database to a few GB; with `.full` it carries the corpus's real `x5c` chain, as a
/// real log does (then the bytes per event match the ingest figure).
enum BigDatabase {
    enum RawHeader: String {
        case compact, full
    }

    struct Built {
        var events: Int
        var customers: Int
        var seconds: Double
    }

    static func build(path: String, plan: HistoryPlan, header: RawHeader, pki: TestPKI, batch: Int = 2_000,
                      progress: (Int) -> Void) throws -> Built
    {
        Storage.remove(path)
        let store = try EventStore(path: path, hash: { SHA256.hash($0) })
        let headerJSON: JSONValue =
            header == .full ? pki.header() : ["alg": "ES256", "kid": "entitlements-bench stand-in: not signed"]
        let headerSegment = Base64Encoding.url(Array(JSONWriter.string(headerJSON).utf8))
        let signatureSegment = Base64Encoding.url([UInt8](repeating: 0, count: 64))
        let maker = InputMaker(plan: plan, headerSegment: headerSegment, signatureSegment: signatureSegment)
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
            for outcome in try store.append(current, rules: BenchRules.rules, rulesJSON: rulesJSON, receivedAt: TestPayloads_january2026) {
                guard case .appended = outcome else { throw BenchFailure("building the database: an event was not appended: \(outcome)") }
                appended += 1
            }
            group.wait()
            next = try produced.value[0].get()
            progress(appended)
        }
        return Built(events: appended, customers: plan.customers, seconds: Clock.now() - start)
    }

    /// Makes verified inputs from the plan's payloads, with stand-in JWS strings.
    struct InputMaker: Sendable {
        var plan: HistoryPlan
        var headerSegment: String
        var signatureSegment: String

        func jws(_ payload: JSONValue) -> String {
            headerSegment + "." + Base64Encoding.url(Array(JSONWriter.string(payload).utf8)) + "." + signatureSegment
        }

        func items(_ range: Range<Int>) throws -> [AppendItem] {
            var items: [AppendItem] = []
            items.reserveCapacity(range.count)
            for index in range {
                let (c, k) = plan.position(index)
                let payloads = plan.payloads(customer: c, event: k)
                let transactionJWS = jws(payloads.transaction)
                let renewalJWS = jws(payloads.renewal)
                let notificationJSON = payloads.notification(transactionJWS, renewalJWS)
                do {
                    let notification = SignedNotification(
                        jws: jws(notificationJSON), payload: try NotificationPayload(json: notificationJSON),
                        transaction: SignedTransaction(jws: transactionJWS, payload: try TransactionPayload(json: payloads.transaction)),
                        renewalInfo: SignedRenewalInfo(jws: renewalJWS, payload: try RenewalInfoPayload(json: payloads.renewal)))
                    items.append(.verified(.notification(notification)))
                } catch {
                    throw BenchFailure("a planned payload does not decode: \(error)")
                }
            }
            return items
        }
    }
}
