/// What recording the lifecycle feed needs of a customer's data
/// (``LifecycleEvents/unrecorded(state:events:consumptionReasons:rules:now:isRecorded:)``).
public struct UnrecordedLifecycle: Sendable, Hashable {
    /// The events due by then whose id is not recorded yet, ordered by `effectiveAt`, then `id`.
    public var events: [LifecycleEvent]
    /// The earliest `effectiveAt` after then among all the events (when time alone
    /// makes the next one due), or `nil`.
    public var nextDue: Int64?
    /// The subscriptions' turns the revenue facts read.
    public var turns: SubscriptionTurns

    public init(events: [LifecycleEvent], nextDue: Int64?, turns: SubscriptionTurns) {
        self.events = events
        self.nextDue = nextDue
        self.turns = turns
    }
}

/// The turns of a customer's subscriptions that the revenue facts read: each trial
/// conversion (a RENEWAL or PRODUCT_CHANGE with `isTrialConversion`) and each
/// EXPIRATION, as the lifecycle derives them, in no particular order.
public struct SubscriptionTurns: Sendable, Hashable {
    /// One turn of one subscription.
    public struct Turn: Sendable, Hashable {
        public var originalTransactionId: String
        /// The transaction the event is about.
        public var transactionId: String
        /// The event's `effectiveAt`.
        public var at: Int64
        /// For an expiration: whether its `reason` is `VOLUNTARY`.
        public var voluntary: Bool

        public init(originalTransactionId: String, transactionId: String, at: Int64, voluntary: Bool = false) {
            self.originalTransactionId = originalTransactionId
            self.transactionId = transactionId
            self.at = at
            self.voluntary = voluntary
        }
    }

    public var conversions: [Turn] = []
    public var expirations: [Turn] = []
    /// Each subscription's transactions, first to last, as the lifecycle sorted them
    /// (shared, not copied, with the revenue facts); `nil` when not at hand.
    var subscriptions: [String: [TransactionFacts]]? = nil

    public init() {}

    /// Equal turns (the subscriptions sorted along are the state's either way).
    public static func == (lhs: SubscriptionTurns, rhs: SubscriptionTurns) -> Bool {
        lhs.conversions == rhs.conversions && lhs.expirations == rhs.expirations
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(conversions)
        hasher.combine(expirations)
    }

    /// The turns among `lifecycle` (the customer's lifecycle events).
    public init(lifecycle: [LifecycleEvent]) {
        for event in lifecycle {
            guard let otid = event.originalTransactionId, let id = event.transactionId else { continue }
            switch event.type {
            case .renewal, .productChange:
                if case .bool(true)? = event.extra["isTrialConversion"] {
                    conversions.append(Turn(originalTransactionId: otid, transactionId: id, at: event.effectiveAt))
                }
            case .expiration:
                expirations.append(
                    Turn(
                        originalTransactionId: otid, transactionId: id, at: event.effectiveAt,
                        voluntary: event.extra["reason"] == .string("VOLUNTARY")))
            default:
                continue
            }
        }
    }
}
