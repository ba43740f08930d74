import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A chain that verified: the leaf's key, and the times at which the whole chain is valid.
struct VerifiedChain: Sendable {
    /// The leaf certificate's P-256 public key.
    let key: P256PublicKey
    /// Latest `notBefore` over leaf, intermediate and root, in ms.
    let notBefore: Int64
    /// Earliest `notAfter` over leaf, intermediate and root, in ms.
    let notAfter: Int64

    /// Whether OpenSSL would find every certificate valid at `millis`. OpenSSL compares whole
    /// seconds and treats `notAfter` itself as expired, which for millisecond bounds that are
    /// whole seconds is exactly `notBefore <= t < notAfter`.
    func isValid(atMillis millis: Int64) -> Bool {
        notBefore <= millis && millis < notAfter
    }
}

/// Verified chains keyed by the exact bytes of the JWS header segment that carried them
/// (which holds `alg` and the whole `x5c`), bounded, oldest evicted first, thread-safe.
///
/// Only successes are cached. A hit answers for a `signedDate` inside the chain's validity
/// window; outside it, the caller verifies again from scratch, so a cached answer is always the
/// answer the uncached path gives.
final class ChainCache: Sendable {
    private struct Entry: Sendable {
        let hash: UInt64
        let header: [UInt8]
        let chain: VerifiedChain
        /// SHA-256 after `header.`: the part of every signing input this header starts.
        let signingPrefix: SHA256.Prefix
    }

    /// A cached chain, and the SHA-256 state after its header and the `.` that follows it.
    struct Hit {
        let chain: VerifiedChain
        let signingPrefix: SHA256.Prefix
    }

    private struct State: Sendable {
        var entries: [Entry] = []
        var next = 0
        /// The entry found last: nearly every JWS carries the header of the one before
        /// (one certificate signs everything for years), and comparing it costs less
        /// than hashing it.
        var lastHit: Int?
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    func lookup(header: UnsafeBufferPointer<UInt8>) -> Hit? {
        guard capacity > 0, header.count > 0 else { return nil }
        func equal(_ entry: Entry) -> Bool {
            entry.header.count == header.count
                && entry.header.withUnsafeBufferPointer { memcmp($0.baseAddress!, header.baseAddress!, header.count) == 0 }
        }
        return state.withLock { state -> Hit? in
            if let last = state.lastHit, last < state.entries.count, equal(state.entries[last]) {
                return Hit(chain: state.entries[last].chain, signingPrefix: state.entries[last].signingPrefix)
            }
            let hash = Self.hash(header)
            for (index, entry) in state.entries.enumerated() where entry.hash == hash && equal(entry) {
                state.lastHit = index
                return Hit(chain: entry.chain, signingPrefix: entry.signingPrefix)
            }
            return nil
        }
    }

    func insert(header: UnsafeBufferPointer<UInt8>, chain: VerifiedChain) {
        guard capacity > 0, header.count > 0 else { return }
        let hash = Self.hash(header)
        let dot: [UInt8] = [UInt8(ascii: ".")]
        let prefix = dot.withUnsafeBufferPointer { SHA256.Prefix(header, $0) }
        let entry = Entry(hash: hash, header: Array(header), chain: chain, signingPrefix: prefix)
        state.withLock { state in
            for (index, existing) in state.entries.enumerated()
            where existing.hash == hash && existing.header == entry.header {
                state.entries[index] = entry
                return
            }
            if state.entries.count < capacity {
                state.entries.append(entry)
            } else {
                state.entries[state.next] = entry
                state.next = (state.next + 1) % capacity
            }
        }
    }

    /// How many chains are remembered.
    var count: Int { state.withLock { $0.entries.count } }

    /// How many of the remembered chains' keys check signatures with a table of their multiples.
    var keyTableCount: Int {
        let keys = state.withLock { state in state.entries.map(\.chain.key) }
        return keys.filter(\.usesTable).count
    }

    /// A fast 64-bit hash of the header bytes (not cryptographic: equality is checked in full).
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        guard let base = bytes.baseAddress else { return hash }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            hash = (hash ^ word) &* 0x0000_0100_0000_01B3
            hash ^= hash >> 29
            offset += 8
        }
        while offset < bytes.count {
            hash = (hash ^ UInt64(bytes[offset])) &* 0x0000_0100_0000_01B3
            offset += 1
        }
        return hash ^ (hash >> 32)
    }
}
