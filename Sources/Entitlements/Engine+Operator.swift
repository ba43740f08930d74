import EntitlementCore
internal import EventStore
import Foundation

/// Whom an operator's grant or credit is for: an App Store customer, or an app user
/// (the team's own account id) itself.
public enum OperatorTarget: Sendable, Hashable {
    case customer(CustomerQuery)
    case appUser(String)
}

/// Who acted, and why: recorded with every operator event.
public struct OperatorContext: Sendable, Hashable {
    /// `--operator NAME`, or the admin token's label in `serve`.
    public var operatorName: String?
    /// `--reason TEXT`.
    public var reason: String?

    public init(operatorName: String? = nil, reason: String? = nil) {
        self.operatorName = operatorName
        self.reason = reason
    }
}

/// A grant to record (specification section 13).
public struct GrantRequest: Sendable, Hashable {
    /// How long a grant lasts: until a moment, or a number of days from its start.
    public enum Length: Sendable, Hashable {
        case until(Int64)
        case days(Int64)
    }

    public var id: String
    public var target: OperatorTarget
    public var entitlement: String
    /// When it starts; `nil` is now (and a retry without it is then compared without it).
    public var from: Int64?
    public var length: Length
    /// Grant an entitlement no product of the rules gives.
    public var force: Bool
    public var context: OperatorContext

    public init(
        id: String, target: OperatorTarget, entitlement: String, from: Int64? = nil, length: Length, force: Bool = false,
        context: OperatorContext = OperatorContext()
    ) {
        self.id = id
        self.target = target
        self.entitlement = entitlement
        self.from = from
        self.length = length
        self.force = force
        self.context = context
    }
}

/// What became of an operator's action.
public enum OperatorAnswer: Sendable, JSONRepresentable {
    /// Logged (`appended`) or logged before with the same content (`duplicate`).
    case recorded(outcome: IngestResult.Outcome, record: OperatorRecord)
    /// Not logged, and why.
    case refused(OperatorRefusal)

    /// `{"result": "appended"|"duplicate", "id": ...}` or `{"error": {"code", "message"}}`.
    public func json() -> JSONValue {
        switch self {
        case .recorded(let outcome, let record):
            return .object(JSONObject([("result", .string(outcome.rawValue)), ("id", .string(record.id))]))
        case .refused(let refusal):
            return ["error": ["code": .string(refusal.code), "message": .string(refusal.message)]]
        }
    }
}

/// The answer to a query by app user.
public enum AppUserAnswer: Sendable, JSONRepresentable {
    case appUser(AppUserView)
    case notFound(String)
    case refused(OperatorRefusal)

    public func json() -> JSONValue {
        switch self {
        case .appUser(let view): return view.json()
        case .notFound(let message): return ["error": ["code": "NOT_FOUND", "message": .string(message)]]
        case .refused(let refusal): return ["error": ["code": .string(refusal.code), "message": .string(refusal.message)]]
        }
    }
}

extension Engine {
    /// Records an operator's grant: `entitlement` active for the target from `from`
    /// (default now) until the end given (event kind `grant`, idempotent by id: the same
    /// again is a `duplicate`, other content `GRANT_CONFLICT`).
    ///
    /// Refused, with nothing recorded: `INVALID_GRANT` (the end not after the start),
    /// `UNKNOWN_ENTITLEMENT` (no product of the rules gives it, unless `force`),
    /// `INVALID_APP_USER_ID`, `NOT_FOUND` (an unknown customer).
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func grant(_ request: GrantRequest, now: Int64? = nil) throws(EngineError) -> OperatorAnswer {
        let recordedAt = now ?? Self.now()
        let from = request.from ?? recordedAt
        let until: Int64
        var days: Int64? = nil
        switch request.length {
        case .until(let end): until = end
        case .days(let count):
            guard count > 0, count <= 36_500 else {
                return .refused(OperatorRefusal(code: "INVALID_GRANT", message: "days must be a whole number from 1 to 36500 (got \(count))"))
            }
            days = count * 86_400_000
            let (end, overflow) = from.addingReportingOverflow(count * 86_400_000)
            guard !overflow else {
                return .refused(OperatorRefusal(
                    code: "INVALID_GRANT", message: "from (\(from)) plus \(count) day\(count == 1 ? "" : "s") is past the largest time: give an earlier from"))
            }
            until = end
        }
        let record = OperatorRecord(
            id: request.id, recordedAt: recordedAt, operatorName: request.context.operatorName, reason: request.context.reason,
            action: .grant(entitlement: request.entitlement, from: from, until: until))
        var given = OperatorCheck.GivenMoments(from: request.from != nil, days: days)
        if case .until = request.length { given.until = true }
        let rules = (try? activeRules()) ?? configuration.rules
        // Checked after the id: the same grant again is a duplicate even once its end has
        // passed, or with rules that no longer give its entitlement.
        return try appendOperator(record, target: request.target, given: given, conflictCode: "GRANT_CONFLICT", now: recordedAt) {
            _, _ in
            OperatorCheck.grantRefusal(entitlement: request.entitlement, from: from, until: until, rules: rules, force: request.force)
        }
    }

    /// Ends the grant `id` at `at` (default now): event kind `grant_revoked`, filed where
    /// the grant is. `NOT_FOUND` when no grant has that id; the same again is a
    /// `duplicate`, another moment `ID_CONFLICT`.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func revokeGrant(id: String, at: Int64? = nil, context: OperatorContext = OperatorContext(), now: Int64? = nil)
        throws(EngineError) -> OperatorAnswer
    {
        let recordedAt = now ?? Self.now()
        let record = OperatorRecord(
            id: id, recordedAt: recordedAt, operatorName: context.operatorName, reason: context.reason,
            action: .grantRevoked(at: at ?? recordedAt))
        return try appendOperator(record, target: nil, given: OperatorCheck.GivenMoments(at: at != nil), conflictCode: "ID_CONFLICT", now: recordedAt) {
            _, _ in nil
        }
    }

    /// Adds `units` (or, below zero, takes them) of `currency` to the target's balance
    /// from now on: event kind `credit`. `INSUFFICIENT_BALANCE` when the balance would
    /// fall below zero (for an app user: its customers' balances and its own credits,
    /// summed), `INVALID_CREDIT` for 0 units; the same again is a `duplicate`, other
    /// content `ID_CONFLICT`.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func credit(
        id: String, target: OperatorTarget, currency: String, units: Int64, context: OperatorContext = OperatorContext(),
        now: Int64? = nil
    ) throws(EngineError) -> OperatorAnswer {
        let recordedAt = now ?? Self.now()
        if units == 0 || currency.isEmpty, let refusal = OperatorCheck.creditRefusal(currency: currency, units: units, balance: 0) {
            return .refused(refusal)
        }
        let record = OperatorRecord(
            id: id, recordedAt: recordedAt, operatorName: context.operatorName, reason: context.reason,
            action: .credit(currency: currency, units: units))
        let rules = (try? activeRules()) ?? configuration.rules
        let appUsers = configuration.appUsers
        return try appendOperator(record, target: target, given: OperatorCheck.GivenMoments(), conflictCode: "ID_CONFLICT", now: recordedAt) {
            state, store in
            // For an app user, the balance its view answers: its customers' and its own, summed.
            var views = [Evaluation.evaluate(state, rules: rules, at: recordedAt)]
            if let appUserId = OperatorRecord.appUser(ofKey: state.key) {
                for customer in try Self.appUserCustomers(appUserId, store: store, appUsers: appUsers) {
                    views.append(Evaluation.evaluate(customer, rules: rules, at: recordedAt))
                }
            }
            let balance = AppUserView.summedBalances(views).first { $0.currency == currency }?.amount ?? 0
            return OperatorCheck.creditRefusal(currency: currency, units: units, balance: balance)
        }
    }

    /// Links the customer to the app user `appUserId`: event kind `link`. A customer
    /// linked to another app user before moves (policy `transfer`, lifecycle `TRANSFER`),
    /// or the link is refused with `LINK_CONFLICT` (policy `keep`). The same again is a
    /// `duplicate`, other content under the id `ID_CONFLICT`.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func link(
        id: String, appUserId: String, customer: CustomerQuery, context: OperatorContext = OperatorContext(), now: Int64? = nil
    ) throws(EngineError) -> OperatorAnswer {
        if let refusal = OperatorCheck.appUserIdRefusal(appUserId) { return .refused(refusal) }
        let recordedAt = now ?? Self.now()
        let record = OperatorRecord(
            id: id, appUserId: appUserId, recordedAt: recordedAt, operatorName: context.operatorName, reason: context.reason,
            action: .link)
        let appUsers = configuration.appUsers
        return try appendOperator(
            record, target: .customer(customer), given: OperatorCheck.GivenMoments(), conflictCode: "ID_CONFLICT", now: recordedAt
        ) { state, _ in
            guard appUsers.transfer == .keep, let current = appUsers.appUser(of: state), current != appUserId else { return nil }
            return OperatorRefusal(
                code: "LINK_CONFLICT",
                message: "customer \(state.key) is linked to app user \(current); appUsers.transfer is \"keep\", so it stays there")
        }
    }

    /// What the app user `appUserId` may use at `at` (default now): its linked
    /// customers' views, its own and its customers' grants, balances summed.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func query(appUserId: String, at: Int64? = nil) throws(EngineError) -> AppUserAnswer {
        if let refusal = OperatorCheck.appUserIdRefusal(appUserId) { return .refused(refusal) }
        let at = at ?? Self.now()
        let rules = (try? activeRules()) ?? configuration.rules
        let appUsers = configuration.appUsers
        do {
            return try readers.withReader { store throws(StoreError) -> AppUserAnswer in
                let own = try store.projection(of: OperatorRecord.appUserKey(appUserId))?.state
                let customers = try Self.appUserCustomers(appUserId, store: store, appUsers: appUsers)
                guard own != nil || !customers.isEmpty else { return .notFound("no customer is linked to app user \(appUserId), and nothing was given to it") }
                let view = AppUserView.make(
                    appUserId: appUserId, at: at, own: own.map { ($0, Evaluation.evaluate($0, rules: rules, at: at)) },
                    customers: customers.map { ($0, Evaluation.evaluate($0, rules: rules, at: at)) })
                for customer in view.customers { noteProducts(customer, rules: rules) }
                return .appUser(view)
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// The states of the customers linked to `appUserId` now: every customer a link ever
    /// named it (or, with `fromAppAccountToken`, whose data carries its UUID) whose
    /// standing link (else token) is that app user.
    static func appUserCustomers(_ appUserId: String, store: EventStore, appUsers: AppUsersConfiguration) throws(StoreError)
        -> [CustomerState]
    {
        var candidates = try store.customers(everLinkedTo: appUserId)
        if appUsers.fromAppAccountToken { candidates += try store.customers(appAccountToken: appUserId.lowercased()) }
        var seen = Set<CustomerKey>()
        var states: [CustomerState] = []
        for candidate in candidates {
            let key = try store.resolveCustomer(candidate)
            guard seen.insert(key).inserted, let state = try store.projection(of: key)?.state else { continue }
            if appUsers.appUser(of: state) == appUserId { states.append(state) }
        }
        return states
    }

    /// Resolves the target, appends the record through the store (retrying while another
    /// writer holds the database), and confirms replication of what was recorded.
    private func appendOperator(
        _ record: OperatorRecord, target: OperatorTarget?, given: OperatorCheck.GivenMoments, conflictCode: String, now: Int64,
        check: @escaping (CustomerState, EventStore) throws -> OperatorRefusal?
    ) throws(EngineError) -> OperatorAnswer {
        if let refusal = OperatorCheck.idRefusal(record.id) { return .refused(refusal) }
        let rules = (try? activeRules()) ?? configuration.rules
        let answer: OperatorAnswer
        do {
            answer = try store.withLock { store throws(StoreError) -> OperatorAnswer in
                var record = record
                switch target {
                case nil: break
                case .appUser(let appUserId)?:
                    if let refusal = OperatorCheck.appUserIdRefusal(appUserId) { return .refused(refusal) }
                    record.appUserId = appUserId
                case .customer(let query)?:
                    switch try Self.customerKey(query, store: store) {
                    case .found(let key):
                        let linkedUser = record.appUserId
                        record.target(key)
                        record.appUserId = linkedUser
                    case .refused(let refusal): return .refused(refusal)
                    }
                }
                var attempt = 0
                while true {
                    do throws(StoreError) {
                        switch try store.appendOperatorRecord(record, given: given, conflictCode: conflictCode, rules: rules, receivedAt: now, check: check) {
                        case .refused(let refusal): return .refused(refusal)
                        case .appended(_, let logged, _): return .recorded(outcome: .appended, record: logged)
                        case .duplicate(_, let logged, _): return .recorded(outcome: .duplicate, record: logged)
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
        if case .recorded = answer { try confirmReplicated() }
        return answer
    }

    private enum CustomerLookup {
        case found(CustomerKey)
        case refused(OperatorRefusal)
    }

    /// The key of the one customer `query` names.
    private static func customerKey(_ query: CustomerQuery, store: EventStore) throws(StoreError) -> CustomerLookup {
        let customer: UsageCustomer
        switch query {
        case .appTransactionId(let id): customer = .appTransactionId(id)
        case .originalTransactionId(let id): customer = .originalTransactionId(id)
        case .transactionId(let id): customer = .transactionId(id)
        case .appAccountToken(let token):
            let keys = try Self.accountTokenCustomers(token, store: store)
            switch keys.count {
            case 0: return .refused(OperatorRefusal(code: "NOT_FOUND", message: "no customer's account token is \(token)"))
            case 1: return .found(keys[0])
            default:
                return .refused(
                    OperatorRefusal(
                        code: "AMBIGUOUS_CUSTOMER",
                        message: "appAccountToken \(token) is carried by \(keys.count) customers (\(keys.joined(separator: ", "))): name one by --app-transaction-id"))
            }
        }
        guard let key = try Self.customerKey(customer, store: store) else {
            return .refused(OperatorRefusal(code: "NOT_FOUND", message: "no customer for \(Self.describe(customer))"))
        }
        return .found(key)
    }
}

extension Engine {
    /// Records a grant, on the engine's threads. See ``grant(_:now:)``.
    public func grant(_ request: GrantRequest, now: Int64? = nil) async throws(EngineError) -> OperatorAnswer {
        try await onEngineThread { () throws(EngineError) in try self.grant(request, now: now) }
    }

    /// Ends a grant, on the engine's threads. See ``revokeGrant(id:at:context:now:)``.
    public func revokeGrant(id: String, at: Int64? = nil, context: OperatorContext = OperatorContext(), now: Int64? = nil)
        async throws(EngineError) -> OperatorAnswer
    {
        try await onEngineThread { () throws(EngineError) in try self.revokeGrant(id: id, at: at, context: context, now: now) }
    }

    /// Records a credit, on the engine's threads. See ``credit(id:target:currency:units:context:now:)``.
    public func credit(
        id: String, target: OperatorTarget, currency: String, units: Int64, context: OperatorContext = OperatorContext(),
        now: Int64? = nil
    ) async throws(EngineError) -> OperatorAnswer {
        try await onEngineThread { () throws(EngineError) in
            try self.credit(id: id, target: target, currency: currency, units: units, context: context, now: now)
        }
    }

    /// Links a customer to an app user, on the engine's threads. See ``link(id:appUserId:customer:context:now:)``.
    public func link(
        id: String, appUserId: String, customer: CustomerQuery, context: OperatorContext = OperatorContext(), now: Int64? = nil
    ) async throws(EngineError) -> OperatorAnswer {
        try await onEngineThread { () throws(EngineError) in
            try self.link(id: id, appUserId: appUserId, customer: customer, context: context, now: now)
        }
    }

    /// What an app user may use, on the engine's threads. See ``query(appUserId:at:)``.
    public func query(appUserId: String, at: Int64? = nil) async throws(EngineError) -> AppUserAnswer {
        try await onEngineThread { () throws(EngineError) in try self.query(appUserId: appUserId, at: at) }
    }
}
