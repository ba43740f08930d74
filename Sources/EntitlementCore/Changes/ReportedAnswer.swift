/// What the change feed reports of a customer: the active entitlements and
/// their `expiresDate` (specification section 8).
public struct ReportedAnswer: Sendable, Hashable {
    /// Active entitlement name -> its `expiresDate` (`nil`: no end).
    public var active: [String: Int64?]

    public init(active: [String: Int64?] = [:]) { self.active = active }

    /// The answer a view gives.
    public init(_ view: CustomerView) {
        var active: [String: Int64?] = [:]
        for entitlement in view.entitlements where entitlement.active { active[entitlement.name] = .some(entitlement.expiresDate) }
        self.active = active
    }

    /// One entitlement's difference between two answers.
    public struct Difference: Sendable, Hashable {
        public var entitlement: String
        public var active: Bool
        public var expiresDate: Int64?
    }

    /// What changed from `old` to `self`, by entitlement name.
    public func differences(from old: ReportedAnswer) -> [Difference] {
        // Both answers' names, sorted, each taken once (an answer holds a few: no set is built).
        var names = Array(old.active.keys)
        names.append(contentsOf: active.keys)
        names.sort { $0.utf8Precedes($1) }
        var result: [Difference] = []
        for (index, name) in names.enumerated() where index == 0 || names[index - 1] != name {
            switch (old.active[name], active[name]) {
            case (nil, nil): continue
            case (_?, nil): result.append(Difference(entitlement: name, active: false, expiresDate: nil))
            case (let before, let after?):
                if before != after { result.append(Difference(entitlement: name, active: true, expiresDate: after)) }
            }
        }
        return result
    }

    /// The answer as the store kept it before the binary codec, JSON `[["name", expires|null], ...]`;
    /// `nil` when `value` is not of that form. (Now kept as ``encoded()``.)
    public init?(json value: JSONValue) {
        guard case .array(let members) = value else { return nil }
        var active: [String: Int64?] = [:]
        for member in members {
            guard case .array(let pair) = member, pair.count == 2, case .string(let name) = pair[0] else { return nil }
            switch pair[1] {
            case .null: active[name] = .some(nil)
            case .int(let date): active[name] = .some(date)
            default: return nil
            }
        }
        self.active = active
    }
}

/// The moments at which a customer's reported answer changes, computed from
/// the state alone: for the change feed (specification section 8).
public enum ChangeTimeline {
    /// The first moment after `now` at which the answer (active entitlements
    /// and their `expiresDate`) differs from the answer at `now`, with
    /// everything known now; `nil` when it never changes by time alone.
    ///
    /// Checked at the candidate moments of ``CustomerHistory`` (at most `limit`
    /// of them; past that, the last one checked is returned, so the caller
    /// looks again then).
    /// - Parameter answer: the answer at `now`, when the caller has it already.
    public static func nextChange(
        of state: CustomerState, rules: Rules, after now: Int64, answer: ReportedAnswer? = nil, limit: Int = 256
    ) -> Int64? {
        AnswerTimeline(state: state, rules: rules, now: now, answer: answer).nextChange(limit: limit)
    }

    /// When entitlement `name`'s answer at `now` took effect: the latest
    /// candidate moment at or before `now` at which it changed (a millisecond
    /// before it differs); `nil` when none is found within `limit` moments.
    public static func effectiveAt(
        of name: String, in state: CustomerState, rules: Rules, now: Int64, limit: Int = 256
    ) -> Int64? {
        AnswerTimeline(state: state, rules: rules, now: now).effectiveAt(of: [name], limit: limit)[name]
    }
}

extension Array {
    /// The first index whose element does not satisfy `belongs` (elements that do come first).
    func partitionPoint(_ belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
