/// One customer's reported answer around one moment `now`, for the change feed
/// (specification section 8): the answer at `now`, when each entitlement's answer
/// took effect and when the answer next changes by time alone, all from one list
/// of candidate moments and one evaluation per moment looked at.
///
/// ``ChangeTimeline`` answers the same questions one at a time.
public struct AnswerTimeline {
    /// The state's candidate moments (those of ``CustomerHistory`` up to ``asOf``), ascending.
    public let moments: [Int64]
    /// The moment the answers are about (`now` when made).
    public let asOf: Int64
    /// The answer at ``asOf``.
    public let answer: ReportedAnswer

    private let state: CustomerState
    private let rules: Rules
    /// The index in ``moments`` of the first moment after ``asOf``.
    private let firstAfterNow: Int

    /// - Parameter answer: the answer at `now`, when the caller has it already.
    public init(state: CustomerState, rules: Rules, now: Int64, answer: ReportedAnswer? = nil) {
        self.state = state
        self.rules = rules
        asOf = now
        self.moments = HistorySources(state: state, events: [Event](), rules: rules, until: now, momentsOnly: true).moments
        self.answer = answer ?? ReportedAnswer(evaluating: state, rules: rules, at: now)
        self.firstAfterNow = moments.partitionPoint { $0 <= now }
    }

    /// The answer at `moment`.
    public func answer(at moment: Int64) -> ReportedAnswer {
        moment == asOf ? answer : ReportedAnswer(evaluating: state, rules: rules, at: moment)
    }

    /// The first candidate moment after ``asOf`` at which the answer differs from
    /// ``answer``, with everything known now; `nil` when it never changes by time
    /// alone. Past `limit` moments checked, the last one checked (the caller looks again then).
    public func nextChange(limit: Int = 256) -> Int64? {
        var checked = 0
        for moment in moments[firstAfterNow...] {
            if answer(at: moment) != answer { return moment }
            checked += 1
            if checked >= limit { return moment }
        }
        return nil
    }

    /// When each of `names`' answer at ``asOf`` took effect: the latest candidate
    /// moment at or before ``asOf`` at which it changed (its answer a millisecond
    /// before differs). One walk back over the moments serves every name; a name
    /// with no such moment within `limit` moments is absent.
    public func effectiveAt(of names: some Sequence<String>, limit: Int = 256) -> [String: Int64] {
        // The names asked are a few: a list, searched in place, costs less than a set's hashing.
        var pending: [String] = []
        for name in names where !pending.contains(name) { pending.append(name) }
        var found: [String: Int64] = [:]
        var index = firstAfterNow - 1
        var checked = 0
        // The answer changes only at candidate moments: from the latest moment at or
        // before `now` on it is the answer at `now`, and the answer a millisecond
        // before a moment is the answer at the moment before it, when that is earlier.
        // The moments are distinct, so the walk meets each once.
        var carried = answer
        while index >= 0, checked < limit, !pending.isEmpty {
            let moment = moments[index]
            if moment > Int64.min {
                let at = carried
                let before = answer(at: moment - 1)
                carried = before
                pending.removeAll { name in
                    guard at.active[name] != before.active[name] else { return false }
                    found[name] = moment
                    return true
                }
            }
            index -= 1
            checked += 1
        }
        return found
    }
}
