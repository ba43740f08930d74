/// What of a customer's events (beyond its state) the lifecycle and revenue
/// derivations read (``LifecycleEvents/all(state:events:consumptionReasons:rules:)``,
/// ``RevenueFacts/derive(state:events:lifecycle:)``): a union the reducer keeps, so
/// that it does not depend on the order events arrive in.
///
/// The derivations read events only for the earlier versions of transactions some
/// version of which carried a `revocationDate`, for CONSUMPTION_REQUEST and
/// RESCIND_CONSENT notifications, for the account tokens of a customer whose data
/// carried more than one (an app user's TRANSFER when the token changes), and for the
/// environment of each transaction of a customer whose data came from several
/// environments (the state's ``CustomerState/environments`` says that). When none of
/// these holds, deriving with no events gives what deriving with every event gives.
public struct EventNeeds: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Some version of a transaction carried a `revocationDate` (a refund, reversed or not).
    public static let revocations = EventNeeds(rawValue: 1)
    /// A CONSUMPTION_REQUEST or RESCIND_CONSENT notification was applied.
    public static let notices = EventNeeds(rawValue: 2)
    /// Signed data of the customer carried more than one `appAccountToken` (compared
    /// without case, as app users are named).
    public static let accountTokens = EventNeeds(rawValue: 4)
    /// Every bit a value may hold.
    static let known: UInt8 = 7
}

extension CustomerState {
    /// Whether the lifecycle and revenue derivations need the customer's events:
    /// `true` when ``eventNeeds`` is unknown (a state stored by an older build), says
    /// so, or the data came from several environments.
    public var derivationsNeedEvents: Bool {
        guard let eventNeeds else { return true }
        return !eventNeeds.isEmpty || environments.hasSeveral
    }

    /// Notes what a revoked version or a notification of `notificationType` makes the
    /// derivations read (nothing when ``eventNeeds`` is unknown: it stays unknown).
    mutating func noteEventNeeds(revoked: Bool, notificationType: NotificationType? = nil) {
        guard eventNeeds != nil else { return }
        if revoked { eventNeeds!.insert(.revocations) }
        if notificationType == .consumptionRequest || notificationType == .rescindConsent { eventNeeds!.insert(.notices) }
    }

    /// Notes a claim of `token` beside the standing one: two tokens that differ (without
    /// case) make the derivations read the claims from the log.
    mutating func noteEventNeeds(token: String, beside standing: String) {
        guard eventNeeds != nil, token != standing, token.lowercased() != standing.lowercased() else { return }
        eventNeeds!.insert(.accountTokens)
    }
}
