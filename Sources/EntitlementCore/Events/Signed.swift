/// Where a signed object's raw JWS lives in the log: the event's sequence number
/// and which of the event's JWS it is.
public struct RawRef: Sendable, Hashable, Comparable {
    public enum Slot: UInt8, Sendable, Hashable {
        /// The event's own, outermost JWS.
        case own = 0
        /// A notification's `signedTransactionInfo`.
        case nestedTransaction = 1
        /// A notification's `signedRenewalInfo`.
        case nestedRenewalInfo = 2
        /// A notification's `appData.signedAppTransactionInfo`.
        case nestedAppTransaction = 3
    }

    public var eventSeq: Int64
    public var slot: Slot

    public init(eventSeq: Int64, slot: Slot) {
        self.eventSeq = eventSeq
        self.slot = slot
    }

    public static func < (lhs: RawRef, rhs: RawRef) -> Bool {
        (lhs.eventSeq, lhs.slot.rawValue) < (rhs.eventSeq, rhs.slot.rawValue)
    }
}

/// One version of a signed object: its facts, and where its raw JWS is.
///
/// Two versions compare by `signedDate`, then (specification section 5) by the raw
/// JWS string, then by ``ref`` (the copy logged first). The raw is carried
/// when at hand (at ingest) and left out of stored projections; the rare tie
/// on `signedDate` between two versions logged apart then asks the caller for
/// it (see ``MissingRawJWS``). Equality is of the facts alone, so that state
/// does not depend on which copy of identical content arrived first.
public struct Signed<Facts: Sendable & Hashable>: Sendable, Hashable {
    public var facts: Facts
    public var ref: RawRef
    public var raw: String?

    public init(_ facts: Facts, ref: RawRef, raw: String? = nil) {
        self.facts = facts
        self.ref = ref
        self.raw = raw
    }

    public static func == (lhs: Signed, rhs: Signed) -> Bool { lhs.facts == rhs.facts }
    public func hash(into hasher: inout Hasher) { hasher.combine(facts) }
}

/// A reducer met two versions of one signed object with the same `signedDate`
/// and different contents, and needs their raw JWS to order them.
///
/// The caller loads the raws named by ``refs`` from the log, sets them
/// (``CustomerState/hydrate(_:)`` and on the event) and applies the event again.
/// Until then the state is unchanged.
public struct MissingRawJWS: Error, Sendable, Hashable {
    public var refs: Set<RawRef>
    public init(refs: Set<RawRef>) { self.refs = refs }
}
