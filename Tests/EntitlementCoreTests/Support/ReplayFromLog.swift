import EntitlementCore
import Testing

/// Replay's way of reading events, shared by the property tests: facts from the codec,
/// raws left in the log and loaded only when a tie needs them.
enum ReplayFromLog {
    /// The raw JWS of every signed object of `events`, by where it sits in the log.
    static func raws(of events: [Event]) -> [RawRef: String] {
        var log: [RawRef: String] = [:]
        for event in events {
            switch event.body {
            case .notification(let n):
                if let t = n.transaction { log[t.ref] = t.raw }
                if let r = n.renewalInfo { log[r.ref] = r.raw }
                if let a = n.appTransaction { log[a.ref] = a.raw }
            case .transaction(let t): log[t.ref] = t.raw
            case .renewalInfo(let r): log[r.ref] = r.raw
            case .appTransaction(let a): log[a.ref] = a.raw
            case .receipt, .usage, .operatorAction: break
            }
        }
        return log
    }

    /// Applies `event` to `state` as replay does: when the reducer names raws it needs to
    /// break a tie, they are loaded from `log` and the event applied again (at most twice).
    /// - Returns: How many times raws were loaded.
    static func apply(_ event: Event, to state: inout CustomerState, rules: Rules, log: [RawRef: String]) throws -> Int {
        var event = event
        var attempts = 0
        while true {
            do {
                try state.apply(event, rules: rules)
                return attempts
            } catch {
                attempts += 1
                #expect(attempts < 3)
                let raws = Dictionary(uniqueKeysWithValues: error.refs.map { ($0, log[$0]!) })
                state.hydrate(raws)
                event.hydrate(raws)
            }
        }
    }
}
