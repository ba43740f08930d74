/// Why an operator record is refused before anything is recorded (specification section 13).
public struct OperatorRefusal: Error, Sendable, Hashable {
    /// `INVALID_ID`, `INVALID_GRANT`, `UNKNOWN_ENTITLEMENT`, `INVALID_APP_USER_ID`, `INVALID_CREDIT`,
    /// `INSUFFICIENT_BALANCE`, `NOT_FOUND`, `GRANT_CONFLICT`, `ID_CONFLICT`, `LINK_CONFLICT`.
    public var code: String
    /// What is wrong, for a person to act on.
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// The checks an operator record passes before it is logged: pure functions of the
/// record, the state it is filed into and the rules.
public enum OperatorCheck {
    /// The most bytes an app user id may have.
    public static let maximumAppUserIdBytes = 256

    /// The most bytes an operator record's or a usage record's `id` may have.
    public static let maximumIdBytes = 256

    /// `nil` when `id` may name an operator action or a usage record (1 to 256 bytes of
    /// UTF-8), else why not (`INVALID_ID`), the id called `name` in the message.
    public static func idRefusal(_ id: String, name: String = "the id") -> OperatorRefusal? {
        if id.isEmpty { return OperatorRefusal(code: "INVALID_ID", message: "\(name) must not be empty") }
        let bytes = id.utf8.count
        if bytes > maximumIdBytes {
            return OperatorRefusal(
                code: "INVALID_ID", message: "\(name) has \(bytes) bytes; at most \(maximumIdBytes) are allowed (an order number or a UUID fits)")
        }
        return nil
    }

    /// `nil` when `appUserId` may name an app user (1 to 256 bytes of UTF-8), else why not.
    public static func appUserIdRefusal(_ appUserId: String) -> OperatorRefusal? {
        if appUserId.isEmpty {
            return OperatorRefusal(code: "INVALID_APP_USER_ID", message: "the app user id is empty: give the team's account id")
        }
        let bytes = appUserId.utf8.count
        if bytes > maximumAppUserIdBytes {
            return OperatorRefusal(
                code: "INVALID_APP_USER_ID",
                message: "the app user id has \(bytes) bytes; at most \(maximumAppUserIdBytes) are allowed")
        }
        return nil
    }

    /// Every entitlement some product of the rules gives, sorted.
    public static func knownEntitlements(_ rules: Rules) -> [String] {
        Set(rules.products.values.flatMap(\.entitlements)).sorted { $0.utf8Precedes($1) }
    }

    /// `nil` when a grant of `entitlement` from `from` until `until` may be logged,
    /// else why not: `until` not after `from` (`INVALID_GRANT`), an entitlement no
    /// product of the rules gives (`UNKNOWN_ENTITLEMENT`, unless `force`).
    public static func grantRefusal(entitlement: String, from: Int64, until: Int64, rules: Rules, force: Bool) -> OperatorRefusal? {
        if entitlement.isEmpty {
            return OperatorRefusal(code: "INVALID_GRANT", message: "the entitlement is empty")
        }
        if until <= from {
            return OperatorRefusal(
                code: "INVALID_GRANT", message: "until (\(until)) must be after from (\(from)): the grant would give nothing")
        }
        if !force && !knownEntitlements(rules).contains(entitlement) {
            return OperatorRefusal(code: "UNKNOWN_ENTITLEMENT", message: unknownEntitlementMessage(entitlement, rules: rules))
        }
        return nil
    }

    /// Why `entitlement` is suspicious: no product of the rules gives it (a typo?).
    public static func unknownEntitlementMessage(_ entitlement: String, rules: Rules) -> String {
        let known = knownEntitlements(rules)
        let listed = known.isEmpty ? "no product gives any entitlement" : "known: " + known.joined(separator: ", ")
        return "entitlement \(entitlement) is not given by any product in rules.products (\(listed)); pass --force (over HTTP \"force\": true) to grant it anyway"
    }

    /// `nil` when the entitlement is known to the rules, else the warning to print when
    /// it is granted anyway (`--force`).
    public static func unknownEntitlementWarning(_ entitlement: String, rules: Rules) -> String? {
        let known = knownEntitlements(rules)
        guard !known.contains(entitlement) else { return nil }
        let listed = known.isEmpty ? "no product gives any entitlement" : "known: " + known.joined(separator: ", ")
        return "warning: entitlement \(entitlement) is not given by any product in rules.products (\(listed)); granted anyway (--force)"
    }

    /// `nil` when adding `units` of `currency` at `at` keeps the balance `balance` (the
    /// target's, at `at`) at zero or above and within a whole number of 64 bits, else why not.
    public static func creditRefusal(currency: String, units: Int64, balance: Int64) -> OperatorRefusal? {
        if currency.isEmpty { return OperatorRefusal(code: "INVALID_CREDIT", message: "the currency is empty") }
        if units == 0 { return OperatorRefusal(code: "INVALID_CREDIT", message: "0 units change nothing: give a number above or below 0") }
        let (after, overflow) = balance.addingReportingOverflow(units)
        if overflow && units > 0 {
            return OperatorRefusal(
                code: "INVALID_CREDIT",
                message: "the balance of \(currency) is \(balance); adding \(units) would pass the largest whole number (\(Int64.max))")
        }
        if overflow || after < 0 {
            return OperatorRefusal(
                code: "INSUFFICIENT_BALANCE",
                message: "the balance of \(currency) is \(balance); taking \(-units) would leave it below zero")
        }
        return nil
    }

    /// Whether two records under one identity say the same: `given` lists what the
    /// caller named (a retry without `--from` or `--at` is compared without the
    /// moments it defaulted to now).
    public static func sameContent(_ existing: OperatorRecord, _ new: OperatorRecord, given: GivenMoments) -> Bool {
        guard existing.kind == new.kind, existing.id == new.id, existing.reason == new.reason else { return false }
        switch (existing.action, new.action) {
        case (.grant(let e1, let from1, let until1), .grant(let e2, let from2, let until2)):
            guard e1 == e2, existing.customerKey == new.customerKey else { return false }
            if given.from && from1 != from2 { return false }
            if given.until && until1 != until2 { return false }
            if let days = given.days, until1 - from1 != days { return false }
            return true
        case (.grantRevoked(let at1), .grantRevoked(let at2)):
            return !given.at || at1 == at2
        case (.credit(let c1, let u1), .credit(let c2, let u2)):
            return c1 == c2 && u1 == u2 && existing.customerKey == new.customerKey
        case (.link, .link):
            return existing.appUserId == new.appUserId && existing.customerKey == new.customerKey
        default:
            return false
        }
    }

    /// Which moments of a record the caller gave (the others were now).
    public struct GivenMoments: Sendable, Hashable {
        public var from: Bool
        public var until: Bool
        /// A grant's length in milliseconds, when given as `--days`.
        public var days: Int64?
        public var at: Bool

        public init(from: Bool = false, until: Bool = false, days: Int64? = nil, at: Bool = false) {
            self.from = from
            self.until = until
            self.days = days
            self.at = at
        }
    }
}
