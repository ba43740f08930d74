import EntitlementCore
internal import EventStore

/// The answer of `Engine.history(_:until:)`.
public enum HistoryAnswer: Sendable, Encodable {
    /// The customer's timeline, oldest first (empty when nothing had happened by `until`).
    case lines(appTransactionId: CustomerKey, [HistoryLine])
    /// No customer matches.
    case notFound(String)

    /// The NDJSON lines `history` prints: one object per line, or the `NOT_FOUND` error.
    public func json() -> [JSONValue] {
        switch self {
        case .lines(_, let lines): return lines.map { $0.json() }
        case .notFound(let message): return [["error": ["code": "NOT_FOUND", "message": .string(message)]]]
        }
    }

    /// The lines as a JSON array (what `GET /customers/{id}/history` answers), or the error object.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .lines: try JSONValue.array(json()).encode(to: encoder)
        case .notFound: try json()[0].encode(to: encoder)
        }
    }
}

extension Engine {
    /// A customer's timeline up to `until` (default now): every moment at which
    /// the answer changed, and why (specification section 7), under the configuration's rules.
    /// - Parameters:
    ///   - subject: The customer, by appTransactionId (or `otid:` alias), originalTransactionId
    ///     or transactionId (an app account token names no one customer: `notFound`).
    ///   - until: the last moment of the timeline, in milliseconds since 1970; `nil` for now.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func history(_ subject: CustomerQuery, until: Int64? = nil) throws(EngineError) -> HistoryAnswer {
        let until = until ?? Self.now()
        do {
            return try readers.withReader { store throws(StoreError) -> HistoryAnswer in
                let key: CustomerKey?
                let described: String
                switch subject {
                case .appTransactionId(let id):
                    // What was given to an app user itself is no customer, as in `query`.
                    guard OperatorRecord.appUser(ofKey: id) == nil else { return .notFound("no customer has appTransactionId \(id)") }
                    key = try store.resolveCustomer(id)
                    described = "appTransactionId \(id)"
                case .originalTransactionId(let otid):
                    key = try store.resolveCustomer("otid:" + otid)
                    described = "originalTransactionId \(otid)"
                case .transactionId(let id):
                    key = try store.customer(transactionId: id)
                    described = "transactionId \(id)"
                case .appAccountToken(let token):
                    return .notFound("history is of one customer: give an appTransactionId, originalTransactionId or transactionId, not appAccountToken \(token)")
                }
                if let key, let projection = try store.projection(of: key) {
                    let events = try store.events(of: key)
                    let rules = try activeRules(store).rules
                    let lines = CustomerHistory.timeline(state: projection.state, events: events, rules: rules, until: until)
                    noteProducts(projection.state, until: until, rules: rules)
                    return .lines(appTransactionId: projection.state.key, lines)
                }
                return .notFound("no customer holds \(described)")
            }
        } catch {
            throw EngineError(error)
        }
    }
}

extension Engine {
    /// A customer's timeline up to `until` (default now), on the engine's threads
    /// (see ``history(_:until:)-(_,_)``).
    public func history(_ subject: CustomerQuery, until: Int64? = nil) async throws(EngineError) -> HistoryAnswer {
        try await onEngineThread { () throws(EngineError) in try self.history(subject, until: until) }
    }
}
