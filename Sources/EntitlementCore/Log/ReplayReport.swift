/// Progress of a replay, reported every few thousand events.
public struct ReplayProgress: Sendable {
    /// Events replayed so far: below ``eventsTotal`` until the scan is over, then equal to it.
    public var eventsDone: Int64
    /// The events of the snapshot the replay reads (those appended meanwhile are caught up after it).
    public var eventsTotal: Int64
    /// Customers rebuilt so far.
    public var customersDone: Int64

    public init(eventsDone: Int64, eventsTotal: Int64, customersDone: Int64) {
        self.eventsDone = eventsDone
        self.eventsTotal = eventsTotal
        self.customersDone = customersDone
    }
}

/// One customer whose active entitlements (at the replay's `now`) differ between
/// the previous projection under the previous rules and the rebuilt one.
public struct ReplayDiff: Sendable, Hashable {
    public var customerKey: CustomerKey
    public var before: [String]
    public var after: [String]
    /// The customer had a projection but has no event left in the log (the log
    /// lost events): the rebuilt state no longer has them at all.
    public var removed: Bool

    public init(customerKey: CustomerKey, before: [String], after: [String], removed: Bool = false) {
        self.customerKey = customerKey
        self.before = before
        self.after = after
        self.removed = removed
    }
}

/// What a replay did.
public struct ReplayReport: Sendable {
    /// Events in the log the replay rebuilt from (the snapshot, and those caught up with), each
    /// once: a TEST notification counts, though it is about no customer.
    public var events: Int64
    /// Customers rebuilt (appTransactionIds and unlinked `otid:` customers; the app users
    /// that hold an operator's grants or credits are rebuilt too, and not counted).
    public var customers: Int64
    /// Customers whose state differs from what was stored before: their stored
    /// facts differ, or their answer at `now` differs under the new rules, or
    /// they are new, or they had a projection and no longer have any event.
    public var changed: Int64
    /// Customers whose active entitlements at `now` changed, and customers that
    /// disappeared (when asked for).
    public var diffs: [ReplayDiff]
    /// Events appended by other writers while the replay ran, applied before the swap.
    public var caughtUp: Int64
    public var rulesVersion: String
    /// Products the log's signed data names that `rules.products` does not (each grants
    /// nothing; specification section 4), sorted: the command line warns of each.
    public var unknownProducts: [String] = []
    /// Every product the log's signed data names, sorted: what ``RulesCheck`` checks
    /// the rules against.
    public var productsSeen: [String] = []

    public init(events: Int64, customers: Int64, changed: Int64, diffs: [ReplayDiff], caughtUp: Int64, rulesVersion: String, unknownProducts: [String] = []) {
        self.events = events
        self.customers = customers
        self.changed = changed
        self.diffs = diffs
        self.caughtUp = caughtUp
        self.rulesVersion = rulesVersion
        self.unknownProducts = unknownProducts
    }
}
