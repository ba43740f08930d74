import EntitlementCore
internal import EventStore
import Foundation

/// Whom a usage record is about.
public enum UsageCustomer: Sendable, Hashable {
    case appTransactionId(String)
    case originalTransactionId(String)
    /// The customer holding this transaction.
    case transactionId(String)
}

/// A usage record to log (specification section 11): the operator's word on what a customer used.
public struct UsageRequest: Sendable, Hashable {
    /// The operator's id for the record: the idempotency key.
    public var id: String
    /// Whom it is about. For a consumed share it may be `nil`: the purchase names its customer.
    public var customer: UsageCustomer?
    /// What was used.
    public var amount: UsageAmount
    /// When; `nil` is now (and a retry without a moment is then a duplicate, not a conflict).
    public var at: Int64?

    public init(id: String, customer: UsageCustomer?, amount: UsageAmount, at: Int64? = nil) {
        self.id = id
        self.customer = customer
        self.amount = amount
        self.at = at
    }
}

/// What became of a usage record.
public enum UsageAnswer: Sendable {
    /// Logged (`appended`) or already logged with the same content (`duplicate`).
    case recorded(UsageReceipt)
    /// Not logged, and why: `NOT_FOUND`, `UNKNOWN_CURRENCY`, `INSUFFICIENT_BALANCE`,
    /// `USAGE_CONFLICT`, `INVALID_USAGE`.
    case refused(UsageRefusal)

    /// The line `usage` prints: `{"result", "kind": "usage", "eventId", "appTransactionId", ...}`
    /// or `{"error": {"code", "message"}}`.
    public func json() -> JSONValue {
        switch self {
        case .recorded(let receipt): return receipt.json()
        case .refused(let refusal): return ["error": ["code": .string(refusal.code), "message": .string(refusal.message)]]
        }
    }
}

/// A usage record logged.
public struct UsageReceipt: Sendable, Hashable {
    /// `appended`, or `duplicate` when the same record was logged before.
    public var outcome: IngestResult.Outcome
    public var usage: UsageFacts
    /// The customer the record belongs to now: the one it was filed under, or the one that
    /// customer merged into since (a retry after the merge answers with it).
    public var customer: CustomerKey
    /// The balance of the spent currency at the record's `at`, after it (spends only).
    public var balance: Int64?

    public func json() -> JSONValue {
        var object = JSONObject()
        object["result"] = .string(outcome.rawValue)
        object["kind"] = "usage"
        object["eventId"] = .string(usage.usageId)
        object["appTransactionId"] = .string(customer)
        object["at"] = .int(usage.at)
        switch usage.amount {
        case .spend(let currency, let units):
            object["currency"] = .string(currency)
            object["units"] = .int(units)
            if let balance { object["balance"] = .int(balance) }
        case .consumed(let transactionId, let share):
            object["transactionId"] = .string(transactionId)
            object["consumed"] = .int(share)
        }
        return .object(object)
    }
}

extension Engine {
    /// Logs what a customer used (specification section 11): spent units of a currency, or
    /// the consumed share of one purchase. Appended to the log as an event of kind
    /// `usage`, hash-chained, marked as the operator's word; the customer's projection
    /// is updated in the same transaction, so `query` balances reflect it at once.
    ///
    /// Refused, with nothing recorded: an unknown customer or transaction
    /// (`NOT_FOUND`), a currency no product credits (`UNKNOWN_CURRENCY`), units of 0
    /// or less or a share outside 0...100000 (`INVALID_USAGE`), spending more than the
    /// balance at `at` (`INSUFFICIENT_BALANCE`), an id already used for other content
    /// (`USAGE_CONFLICT`). The same id with the same content is a `duplicate`.
    ///
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func usage(_ request: UsageRequest, now: Int64? = nil) throws(EngineError) -> UsageAnswer {
        switch request.amount {
        case .spend(_, let units) where units <= 0:
            return .refused(UsageRefusal(code: "INVALID_USAGE", message: "--units must be a whole number above 0 (got \(units))"))
        case .consumed(_, let share) where !(0...Consumption.whole).contains(share):
            return .refused(
                UsageRefusal(code: "INVALID_USAGE", message: "--consumed is thousandths of a percent, 0 to 100000 (got \(share))"))
        default: break
        }
        if let refusal = OperatorCheck.idRefusal(request.id, name: "the usage id") {
            return .refused(UsageRefusal(code: "INVALID_USAGE", message: refusal.message))
        }
        let at = request.at ?? now ?? Self.now()
        let answer: UsageAnswer
        do {
            answer = try store.withLock { store throws(StoreError) -> UsageAnswer in
                let customer: UsageCustomer
                if let given = request.customer {
                    customer = given
                } else if case .consumed(let transactionId, _) = request.amount {
                    customer = .transactionId(transactionId)
                } else {
                    return .refused(UsageRefusal(code: "INVALID_USAGE", message: "name the customer (appTransactionId, originalTransactionId or transactionId)"))
                }
                guard let key = try Self.customerKey(customer, store: store) else {
                    return .refused(UsageRefusal(code: "NOT_FOUND", message: "no customer for \(Self.describe(customer))"))
                }
                let usage = UsageFacts(usageId: request.id, customer: key, at: at, amount: request.amount)
                let rules = try activeRules(store).rules
                var attempt = 0
                while true {
                    do throws(StoreError) {
                        switch try store.appendUsage(usage, atGiven: request.at != nil, rules: rules, receivedAt: now ?? Self.now()) {
                        case .refused(let refusal):
                            return .refused(refusal)
                        case .appended(_, let state):
                            return .recorded(Self.receipt(.appended, usage, state: state, rules: rules))
                        case .duplicate(let seq, let state):
                            _ = seq
                            // The record as logged (a retry without --at keeps the first moment).
                            let logged = state.usages[usage.usageId] ?? usage
                            return .recorded(Self.receipt(.duplicate, logged, state: state, rules: rules))
                        }
                    } catch {
                        // Another writer held the database past the busy timeout: nothing was written, try again.
                        guard error.code == .busy && attempt < 50 else { throw error }
                        attempt += 1
                        usleep(UInt32(20_000 * min(attempt, 10)))
                    }
                }
            }
        } catch {
            throw EngineError(error)
        }
        // A recorded usage (a duplicate too: its first commit may not have reached the replica).
        if case .recorded = answer { try confirmReplicated() }
        return answer
    }

    static func receipt(_ outcome: IngestResult.Outcome, _ usage: UsageFacts, state: CustomerState, rules: Rules) -> UsageReceipt {
        var balance: Int64? = nil
        if case .spend(let currency, _) = usage.amount {
            balance = Evaluation.evaluate(state, rules: rules, at: usage.at).balance(currency)
        }
        return UsageReceipt(outcome: outcome, usage: usage, customer: state.key, balance: balance)
    }

    /// The key of the customer `customer` names, if the log knows it.
    static func customerKey(_ customer: UsageCustomer, store: EventStore) throws(StoreError) -> CustomerKey? {
        switch customer {
        case .appTransactionId(let id):
            // What is given to an app user itself is kept under `user:<U>`: no customer, named by `--app-user-id`.
            guard OperatorRecord.appUser(ofKey: id) == nil else { return nil }
            let key = try store.resolveCustomer(id)
            return try store.projection(of: key) != nil ? key : nil
        case .originalTransactionId(let otid):
            let key = try store.resolveCustomer("otid:" + otid)
            if try store.projection(of: key) != nil { return key }
            for key in try store.customers(originalTransactionId: otid) {
                let resolved = try store.resolveCustomer(key)
                if try store.projection(of: resolved) != nil { return resolved }
            }
            return nil
        case .transactionId(let transactionId):
            guard let key = try store.customer(transactionId: transactionId) else { return nil }
            return try store.projection(of: key)?.state.transactions[transactionId] != nil ? key : nil
        }
    }

    static func describe(_ customer: UsageCustomer) -> String {
        switch customer {
        case .appTransactionId(let id): return "appTransactionId \(id)"
        case .originalTransactionId(let id): return "originalTransactionId \(id)"
        case .transactionId(let id): return "transactionId \(id)"
        }
    }
}
