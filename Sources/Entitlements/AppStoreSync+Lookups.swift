import EntitlementCore
internal import EventStore
import Foundation

/// Support's lookups in the App Store Server API (specification section 10.5), each ingesting
/// what Apple returns through the same verification as any other input.
extension AppStoreSync {
    // MARK: Get Transaction Info

    /// Get Transaction Info for `transactionId`, its signed transaction ingested.
    /// - Returns: the outcome, and the transaction's decoded payload when Apple returned one.
    public func transactionInfo(_ transactionId: String, page: (SyncPage) -> Void) -> (outcome: SyncOutcome, transaction: JSONValue?) {
        var totals = SyncTotals()
        let request = APIRequest.transactionInfo(transactionId: transactionId)
        let response: APIResponse
        do { response = try client.send(request) } catch { return (SyncOutcome(totals: totals, failure: .api(error)), nil) }
        guard let json = response.json, case .string(let jws)? = json["signedTransactionInfo"] else {
            return (SyncOutcome(totals: totals, failure: .malformed(request, response, "has no signedTransactionInfo")), nil)
        }
        let document = InputBytes(JSONWriter.string(["signedTransactionInfo": .string(jws)]))
        if let failure = ingest([document], request: request, response: response, totals: &totals, page: page) {
            return (SyncOutcome(totals: totals, failure: failure), nil)
        }
        // What failed verification is quarantined, and not shown as if Apple had signed it.
        return (SyncOutcome(totals: totals, failure: nil), totals.rejected == 0 ? Self.decodedPayload(jws) : nil)
    }

    // MARK: Get Refund History

    /// Get Refund History (v2) for any transaction id of a customer, from the first page,
    /// following `revision` while `hasMore`; every page ingested. A `revision` that does not
    /// advance, or more pages than `appStoreServerAPI.maxPages`, stops it with `PAGINATION_LOOP`.
    /// - Returns: the outcome, and the refunded transactions' decoded payloads, in Apple's order.
    public func refundHistory(_ id: String, page: (SyncPage) -> Void) -> (outcome: SyncOutcome, refunds: [JSONValue]) {
        var totals = SyncTotals()
        var refunds: [JSONValue] = []
        var revision: String? = nil
        var revisions: Set<String> = []
        var pages = 0
        while true {
            let request = APIRequest.refundHistory(transactionId: id, revision: revision)
            let response: APIResponse
            do { response = try client.send(request) } catch { return (SyncOutcome(totals: totals, failure: .api(error)), refunds) }
            guard let json = response.json, case .array(let signed) = json["signedTransactions"] else {
                return (SyncOutcome(totals: totals, failure: .malformed(request, response, "has no signedTransactions array")), refunds)
            }
            let results: [IngestResult]
            switch ingestWhole(json, request: request, response: response, totals: &totals, page: page) {
            case .failure(let failure): return (SyncOutcome(totals: totals, failure: failure), refunds)
            case .success(let ingested): results = ingested
            }
            // Each element is one input (numbered from 1); what failed verification is not shown.
            let rejected = Set(results.filter { $0.outcome == .rejected }.compactMap(\.input))
            for (offset, element) in signed.enumerated() {
                guard case .string(let jws) = element, !rejected.contains(offset + 1), let payload = Self.decodedPayload(jws) else { continue }
                refunds.append(payload)
            }
            pages += 1
            guard let more = Self.hasMore(json) else {
                return (SyncOutcome(totals: totals, failure: .malformed(request, response, Self.hasMoreNeitherTrueNorFalse(json))), refunds)
            }
            guard more else { break }
            guard case .string(let next)? = json["revision"], !next.isEmpty else {
                return (SyncOutcome(totals: totals, failure: .malformed(request, response, "says hasMore but carries no revision")), refunds)
            }
            guard revisions.insert(next).inserted, next != revision else {
                return (
                    SyncOutcome(
                        totals: totals,
                        failure: .paginationLoop(request, response, "says hasMore with revision \"\(next)\", which this request already followed: the revision does not advance")),
                    refunds
                )
            }
            guard pages < maxPages else { return (SyncOutcome(totals: totals, failure: .tooManyPages(request, response, maxPages)), refunds) }
            revision = next
        }
        return (SyncOutcome(totals: totals, failure: nil), refunds)
    }

    // MARK: Look Up Order ID

    /// Look Up Order ID: the order number from the customer's receipt email. Ingests the
    /// transactions Apple returns and answers the view of each customer they belong to.
    public func lookUpOrder(_ orderId: String, at: Int64? = nil, page: (SyncPage) -> Void) -> OrderLookup {
        var totals = SyncTotals()
        let request = APIRequest.lookUpOrderId(orderId: orderId)
        let response: APIResponse
        do { response = try client.send(request) } catch { return OrderLookup(outcome: SyncOutcome(totals: totals, failure: .api(error))) }
        guard let json = response.json, case .int(let status)? = json["status"] else {
            return OrderLookup(outcome: SyncOutcome(totals: totals, failure: .malformed(request, response, "has no status")))
        }
        var lookup = OrderLookup(outcome: SyncOutcome(totals: totals, failure: nil), status: status)
        guard status == 0, case .array(let signed)? = json["signedTransactions"], !signed.isEmpty else {
            page(SyncPage(request: request.description, status: response.status, items: 0, results: []))
            return lookup
        }
        var results: [IngestResult] = []
        switch ingestWhole(json, request: request, response: response, totals: &totals, page: page) {
        case .success(let ingested): results = ingested
        case .failure(let failure): return OrderLookup(outcome: SyncOutcome(totals: totals, failure: failure), status: status)
        }
        lookup.outcome = SyncOutcome(totals: totals, failure: nil)
        var seen: Set<String> = []
        for key in results.compactMap(\.appTransactionId) where seen.insert(key).inserted {
            do {
                if case .customer(let view) = try engine.query(.appTransactionId(key), at: at), !lookup.views.contains(where: { $0.appTransactionId == view.appTransactionId }) {
                    lookup.views.append(view)
                }
            } catch {
                lookup.outcome.failure = .engine(error)
                return lookup
            }
        }
        return lookup
    }

    // MARK: Finish Transaction

    /// Finish Transaction for `transactionId`, recorded in the database (so that
    /// `finishTransactions` never calls again for it).
    public func finishTransaction(_ transactionId: String) -> FinishResult {
        let finisher = TransactionFinisher(engine: engine, clients: [environment: client], clock: clock)
        return finisher.finish(transactionId, environment: environment.rawValue, attempts: 0)
    }

    // MARK: Async

    /// ``transactionInfo(_:page:)`` on a thread of its own, suspending the caller.
    public func transactionInfo(_ transactionId: String) async -> (outcome: SyncOutcome, transaction: JSONValue?) {
        await onThread { self.transactionInfo(transactionId, page: { _ in }) } failed: { (SyncOutcome(totals: SyncTotals(), failure: .engine($0)), nil) }
    }

    /// ``refundHistory(_:page:)`` on a thread of its own, suspending the caller.
    public func refundHistory(_ id: String) async -> (outcome: SyncOutcome, refunds: [JSONValue]) {
        await onThread { self.refundHistory(id, page: { _ in }) } failed: { (SyncOutcome(totals: SyncTotals(), failure: .engine($0)), []) }
    }

    /// ``lookUpOrder(_:at:page:)`` on a thread of its own, suspending the caller.
    public func lookUpOrder(_ orderId: String, at: Int64? = nil) async -> OrderLookup {
        await onThread { self.lookUpOrder(orderId, at: at, page: { _ in }) } failed: {
            OrderLookup(outcome: SyncOutcome(totals: SyncTotals(), failure: .engine($0)))
        }
    }

    /// ``finishTransaction(_:)`` on a thread of its own, suspending the caller.
    public func finishTransaction(_ transactionId: String) async -> FinishResult {
        await onThread { self.finishTransaction(transactionId) } failed: { error in
            var result = FinishResult(transactionId: transactionId, environment: self.environment.rawValue, request: APIRequest.finishTransaction(transactionId: transactionId).description)
            result.message = error.message
            return result
        }
    }

    func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T, failed: (EngineError) -> T) async -> T {
        do {
            return try await engine.onOwnThread("entitlements.sync") { () throws(EngineError) in work() }
        } catch {
            return failed(error)
        }
    }

    // MARK: Decoding

    /// The payload of a compact JWS, decoded without verification (for printing what the
    /// ingest, which verifies, already judged).
    static func decodedPayload(_ jws: String) -> JSONValue? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64.decodeURL(parts[1]) else { return nil }
        return try? JSONParser().parse(bytes)
    }
}

/// What Look Up Order ID found.
public struct OrderLookup: Sendable {
    public var outcome: SyncOutcome
    /// Apple's `status`: 0 valid, 1 invalid (no such order); `nil` when Apple did not answer.
    public var status: Int64?
    /// The view of each customer the order's transactions belong to.
    public var views: [CustomerView] = []

    public init(outcome: SyncOutcome, status: Int64? = nil, views: [CustomerView] = []) {
        self.outcome = outcome
        self.status = status
        self.views = views
    }
}
