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
    /// The raw JWS, in a box of its own: a version of transaction or renewal facts is
    /// then four machine words, which the compiler copies and destroys inline
    /// (a fifth, as an optional string takes, makes every copy of an optional version
    /// go through the type's metadata).
    private var rawBox: RawJWSBox?

    /// The raw JWS, when at hand (`nil` in a state read back from storage).
    public var raw: String? {
        get {
            guard let rawBox else { return nil }
            return rawBox.text
        }
        set {
            if let newValue { rawBox = RawJWSBox(newValue) } else { rawBox = nil }
        }
    }

    public init(_ facts: Facts, ref: RawRef, raw: String? = nil) {
        self.facts = facts
        self.ref = ref
        if let raw { rawBox = RawJWSBox(raw) } else { rawBox = nil }
    }

    public static func == (lhs: Signed, rhs: Signed) -> Bool { lhs.facts == rhs.facts }
    public func hash(into hasher: inout Hasher) { hasher.combine(facts) }
}

/// A raw JWS held by reference (see ``Signed``).
final class RawJWSBox: Sendable {
    let text: String

    init(_ text: String) { self.text = text }
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
