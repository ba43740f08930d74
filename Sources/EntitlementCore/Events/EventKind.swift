/// The kinds of input Apple signs: what the verifier checks, and the log keeps as
/// Apple's evidence.
public enum SignedKind: String, Sendable, Hashable, CaseIterable {
    case notification
    case transaction
    case renewalInfo
    case appTransaction
    /// A legacy PKCS#7 app receipt (specification section 16), signed by Apple's
    /// receipt-signing certificate, not a JWS.
    case receipt
}

/// What an operator records beside Apple's evidence: hash-chained and audited like
/// the rest of the log, but never a JWS, never verified as one, and never taken for
/// what Apple signed.
public enum OperatorKind: String, Sendable, Hashable, CaseIterable {
    /// A usage record: the operator's word on what a customer used (specification section 11).
    case usage
    /// A grant: an entitlement given by an operator for a window of time (specification section 13).
    case grant
    /// The end of a grant before its `until`, by an operator.
    case grantRevoked = "grant_revoked"
    /// Units of a currency added to (or taken from) a balance by an operator.
    case credit
    /// A customer linked to an app user (the team's own account id).
    case link
}

/// The kinds of event in the log, in two families that are never confused: what Apple
/// signed, and what an operator did.
public enum EventKind: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case signed(SignedKind)
    case operatorRecord(OperatorKind)

    public static var allCases: [EventKind] {
        SignedKind.allCases.map(EventKind.signed) + OperatorKind.allCases.map(EventKind.operatorRecord)
    }

    /// The kind's name, as the log's `kind` column and the commands' `kind` fields hold it.
    public var rawValue: String {
        switch self {
        case .signed(let kind): return kind.rawValue
        case .operatorRecord(let kind): return kind.rawValue
        }
    }

    /// The kind named `rawValue`; `nil` for a name the engine does not know.
    public init?(rawValue: String) {
        if let signed = SignedKind(rawValue: rawValue) {
            self = .signed(signed)
        } else if let record = OperatorKind(rawValue: rawValue) {
            self = .operatorRecord(record)
        } else {
            return nil
        }
    }

    public var description: String { rawValue }

    // Shorthands, so that `result.kind == .notification` reads as it says.
    public static let notification = EventKind.signed(.notification)
    public static let transaction = EventKind.signed(.transaction)
    public static let renewalInfo = EventKind.signed(.renewalInfo)
    public static let appTransaction = EventKind.signed(.appTransaction)
    public static let receipt = EventKind.signed(.receipt)
    public static let usage = EventKind.operatorRecord(.usage)
    public static let grant = EventKind.operatorRecord(.grant)
    public static let grantRevoked = EventKind.operatorRecord(.grantRevoked)
    public static let credit = EventKind.operatorRecord(.credit)
    public static let link = EventKind.operatorRecord(.link)
}
