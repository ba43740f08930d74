/// A cheap, non-cryptographic hash of a short byte string, for the codec's
/// own tables. Collisions only cost a comparison: every table compares the
/// bytes themselves before it shares a string.
@inline(__always)
func quickHash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    let count = bytes.count
    var hash = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
    if count >= 8 {
        hash ^= bytes.loadUnaligned(as: UInt64.self)
        hash = (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
        hash ^= bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        if count > 16 {
            hash = (hash ^ (hash >> 32)) &* 0x94D0_49BB_1331_11EB
            hash ^= bytes.loadUnaligned(fromByteOffset: count / 2 - 4, as: UInt64.self)
        }
    } else {
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    }
    hash = (hash ^ (hash >> 31)) &* 0x94D0_49BB_1331_11EB
    return hash ^ (hash >> 29)
}

/// Whether `string` holds exactly `bytes`.
@inline(__always)
func utf8Equals(_ string: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
    let utf8 = string.utf8
    guard utf8.count == bytes.count else { return false }
    let same: Bool? = utf8.withContiguousStorageIfAvailable { mine in
        guard let base = mine.baseAddress, let other = bytes.baseAddress else { return true }
        return memoryEquals(UnsafeRawPointer(base), other, bytes.count)
    }
    return same ?? utf8.elementsEqual(bytes)
}

/// `memcmp(a, b, count) == 0`, without Foundation.
@inline(__always)
func memoryEquals(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var index = 0
    while index + 8 <= count {
        if a.loadUnaligned(fromByteOffset: index, as: UInt64.self) != b.loadUnaligned(fromByteOffset: index, as: UInt64.self) {
            return false
        }
        index += 8
    }
    while index < count {
        if a.load(fromByteOffset: index, as: UInt8.self) != b.load(fromByteOffset: index, as: UInt8.self) { return false }
        index += 1
    }
    return true
}

/// The distinct strings of one encoded value, numbered in order of first use
/// (``StateCodec`` format 2 writes each once and refers to it by number).
struct StringTableBuilder {
    private(set) var strings: [String] = []
    /// Open addressing: each slot an index into `strings` plus one (0 for an empty slot)
    /// and that string's hash, compared before the string itself (a probe that meets
    /// another string then costs no string comparison).
    private var slots: [Slot] = Array(repeating: Slot(entry: 0, hash: 0), count: 32)

    private struct Slot {
        var entry: Int32
        var hash: UInt32
    }

    /// The last string numbered for each field of the facts (``RepeatedField``) and its
    /// number (-1 before the first). A customer's versions repeat most of their fields,
    /// each decoded into one shared `String` (``StringInterner``): the field's next value
    /// is then usually that same string, which `==` finds by its first test (the same
    /// storage, or the same inline bytes) without hashing it.
    private var recentStrings: [String] = Array(repeating: "", count: RepeatedField.count)
    private var recentNumbers: [Int] = Array(repeating: -1, count: RepeatedField.count)

    init() {
        // A customer's state holds about a dozen distinct strings.
        strings.reserveCapacity(16)
    }

    /// The number of `string`, the value of `field`: the same as ``number(of:)``.
    @inline(__always)
    mutating func number(of string: String, repeating field: RepeatedField) -> Int {
        let slot = field.rawValue
        let recent = recentNumbers[slot]
        if recent >= 0, recentStrings[slot] == string { return recent }
        let number = self.number(of: string)
        recentStrings[slot] = strings[number]
        recentNumbers[slot] = number
        return number
    }

    /// The number of `string`, adding it when it is new.
    mutating func number(of string: String) -> Int {
        let hash = Self.hash(string)
        let tag = UInt32(truncatingIfNeeded: hash >> 32)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let found = slots[slot]
            if found.entry == 0 { break }
            if found.hash == tag, strings[Int(found.entry) - 1] == string { return Int(found.entry) - 1 }
            slot = (slot + 1) & mask
        }
        strings.append(string)
        if strings.count * 2 > slots.count {
            rehash(capacity: slots.count * 2)
        } else {
            slots[slot] = Slot(entry: Int32(strings.count), hash: tag)
        }
        return strings.count - 1
    }

    private mutating func rehash(capacity: Int) {
        slots = Array(repeating: Slot(entry: 0, hash: 0), count: capacity)
        let mask = capacity - 1
        for (index, string) in strings.enumerated() {
            let hash = Self.hash(string)
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot].entry != 0 { slot = (slot + 1) & mask }
            slots[slot] = Slot(entry: Int32(index + 1), hash: UInt32(truncatingIfNeeded: hash >> 32))
        }
    }

    @inline(__always)
    private static func hash(_ string: String) -> UInt64 {
        string.utf8.withContiguousStorageIfAvailable { quickHash(UnsafeRawBufferPointer($0)) }
            ?? UInt64(truncatingIfNeeded: string.hashValue)
    }
}

/// A field of the facts whose value a customer's versions mostly repeat (a product, an
/// original transaction, an account token), numbered through a memo of its last value
/// (``StringTableBuilder/number(of:repeating:)``).
enum RepeatedField: Int, CaseIterable {
    case originalTransactionId, productId, appTransactionId, subscriptionGroupIdentifier, appAccountToken, currency
    case renewalOriginalTransactionId, renewalAppTransactionId, renewalProductId, autoRenewProductId, renewalAppAccountToken
    case renewalCurrency

    static let count = allCases.count
}

/// A cache of recently decoded strings, so that decoding many values that
/// repeat the same product ids, app transaction ids and tokens shares one
/// `String` per distinct value instead of allocating one per occurrence
/// (Apple's ids are 16 to 19 digits: too long for Swift's inline small strings).
///
/// Direct-mapped and bounded: a string decoded through it is always equal to
/// its bytes; the cache only decides whether the storage is shared. One per
/// thread (it is a value; share none between threads).
public struct StringInterner: Sendable {
    private var slots: [String?]

    /// - Parameter capacity: Slots, rounded up to a power of two.
    public init(capacity: Int = 4_096) {
        var size = 16
        while size < capacity { size <<= 1 }
        slots = Array(repeating: nil, count: size)
    }

    /// The string of `bytes`, already checked to be valid UTF-8 when new.
    @inline(__always)
    mutating func string(_ bytes: UnsafeRawBufferPointer, make: () -> String?) -> String? {
        // Short strings too: one of up to 15 bytes is stored inline, without an allocation,
        // but checking and copying its UTF-8 again costs more than finding it here.
        let slot = Int(truncatingIfNeeded: quickHash(bytes)) & (slots.count - 1)
        if let cached = slots[slot], utf8Equals(cached, bytes) { return cached }
        guard let made = make() else { return nil }
        slots[slot] = made
        return made
    }
}
