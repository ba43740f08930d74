/// Facts that know when they were signed: what orders two versions of one
/// signed object.
protocol SignedDated {
    var signedDate: Int64 { get }
    /// The SHA-256 of the legacy receipt the version was read from; `nil` for signed V2 data.
    var receiptDigest: String? { get }
}

extension SignedDated {
    var receiptDigest: String? { nil }
}

extension TransactionFacts: SignedDated {}
extension RenewalFacts: SignedDated {}
extension AppTransactionFacts: SignedDated {}

/// Which of two versions of one signed object a reducer keeps.
enum VersionVerdict: Sendable, Hashable {
    /// The version already in the state stays.
    case keepExisting
    /// The incoming version replaces it.
    case takeIncoming
    /// Same `signedDate`, different contents, and at least one raw JWS is not
    /// at hand: the raws named here are needed to decide.
    case needsRaws(Set<RawRef>)
}

extension Signed where Facts: SignedDated {
    /// Orders `incoming` against `existing` (specification section 5): the total
    /// order (`signedDate`, raw JWS bytes, earlier ``RawRef``).
    ///
    /// 1. The later `signedDate` wins.
    /// 2. On equal `signedDate`, the greater raw JWS wins, comparing UTF-8
    ///    bytes lexicographically; equal raws (the same JWS logged twice) keep
    ///    the copy with the smaller ``RawRef``, the one logged first, so that
    ///    even the stored reference does not depend on the order of application.
    /// 3. The same ref is the same object applied again: nothing changes.
    ///
    /// When a raw needed by 2 is not at hand the verdict names the missing
    /// refs. That includes equal facts under different refs: the same content
    /// may have been signed twice in one millisecond under two JWS, and only
    /// the raws tell which one a third version signed in that millisecond must
    /// beat. Being a total order, the version kept is the same whatever the
    /// order of application and whether raws were at hand from the start or
    /// loaded on demand, so replay gives exactly the bytes ingest gave.
    static func verdict(existing: Signed, incoming: Signed) -> VersionVerdict {
        // Legacy receipts (specification section 16): signed V2 data always wins; between
        // two receipts' versions the later receipt, then the greater receipt digest, then
        // the copy logged first. No raw is needed.
        let existingReceipt = existing.facts.receiptDigest
        let incomingReceipt = incoming.facts.receiptDigest
        if existingReceipt != nil || incomingReceipt != nil {
            guard let existingReceipt else { return .keepExisting }
            guard let incomingReceipt else { return .takeIncoming }
            if incoming.facts.signedDate != existing.facts.signedDate {
                return incoming.facts.signedDate > existing.facts.signedDate ? .takeIncoming : .keepExisting
            }
            if existingReceipt != incomingReceipt {
                return existingReceipt.utf8Precedes(incomingReceipt) ? .takeIncoming : .keepExisting
            }
            return incoming.ref < existing.ref ? .takeIncoming : .keepExisting
        }
        let existingDate = existing.facts.signedDate
        let incomingDate = incoming.facts.signedDate
        if incomingDate != existingDate {
            return incomingDate > existingDate ? .takeIncoming : .keepExisting
        }
        if incoming.ref == existing.ref { return .keepExisting }
        return VersionVerdict.byRaw(existing: (existing.ref, existing.raw), incoming: (incoming.ref, incoming.raw))
    }
}

extension VersionVerdict {
    /// Two things signed in the same millisecond: the greater raw JWS (UTF-8 bytes) wins;
    /// equal raws keep the smaller ref (the copy logged first); a raw not at hand is named.
    static func byRaw(existing: (ref: RawRef, raw: String?), incoming: (ref: RawRef, raw: String?)) -> VersionVerdict {
        guard let existingRaw = existing.raw, let incomingRaw = incoming.raw else {
            var missing = Set<RawRef>()
            if existing.raw == nil { missing.insert(existing.ref) }
            if incoming.raw == nil { missing.insert(incoming.ref) }
            return .needsRaws(missing)
        }
        let order = existingRaw.utf8Order(incomingRaw)
        if order == 0 {
            return incoming.ref < existing.ref ? .takeIncoming : .keepExisting
        }
        return order < 0 ? .takeIncoming : .keepExisting
    }
}

/// Compares two `transactionId`s: numerically when both are decimal digit
/// strings (Apple's are), else by their UTF-8 bytes.
///
/// "The greatest `transactionId`" then means what a person reading the ids
/// expects even if two ids differ in length.
func transactionIdPrecedes(_ lhs: String, _ rhs: String) -> Bool {
    let left = lhs.utf8
    let right = rhs.utf8
    let leftDigits = left.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    let rightDigits = right.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    if leftDigits && rightDigits && !left.isEmpty && !right.isEmpty {
        let leftTrimmed = left.drop(while: { $0 == UInt8(ascii: "0") })
        let rightTrimmed = right.drop(while: { $0 == UInt8(ascii: "0") })
        if leftTrimmed.count != rightTrimmed.count { return leftTrimmed.count < rightTrimmed.count }
        if !leftTrimmed.elementsEqual(rightTrimmed) { return leftTrimmed.lexicographicallyPrecedes(rightTrimmed) }
        // Numerically equal ("007" and "7"): fall through to the bytes so the order stays total.
    }
    return left.lexicographicallyPrecedes(right)
}
