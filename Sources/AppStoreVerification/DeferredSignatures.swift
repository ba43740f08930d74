internal import COpenSSL
import Synchronization

/// ES256 checks put off until a batch's worth can be made at once.
///
/// Verifying a signature inverts `s` modulo the group order, which costs about as much
/// as the rest of a check with a key's table (``P256FixedBase``). Inverting many at once
/// costs one inversion and three multiplications each (Montgomery's trick: invert the
/// product, then peel each factor off). A verifier handed this object (a lane verifying
/// a batch of documents) records each check it would make with a key's table and goes
/// on as if it passed; ``check()`` then makes them all, and the caller verifies again,
/// without deferring, every document one of whose checks failed, so that what it reports
/// is exactly what verifying one JWS at a time reports. Checks with keys that have no
/// table yet are made at once, as before.
///
/// Not thread-safe: used by one thread at a time (it may move between threads, as the
/// pool of a key's table hands it out). Its numbers are kept from one batch to the next.
package final class DeferredSignatures: @unchecked Sendable {
    /// Per check, the 32-byte digest then the 64-byte signature.
    private var bytes: [UInt8] = []
    private var tables: [P256FixedBase] = []
    /// r, s and the running product of the s, per check (grown as needed, kept).
    private var numbers: [OpaquePointer] = []
    private var inverse: OpaquePointer? = nil
    private var scratch: P256FixedBase.Scratch? = nil

    package init() {}

    deinit {
        numbers.forEach { BN_free($0) }
        if let inverse { BN_free(inverse) }
    }

    /// How many checks are waiting.
    package var count: Int { tables.count }

    /// Forgets the checks after the first `count` (a document verified again at once).
    package func truncate(to count: Int) {
        guard count < tables.count else { return }
        tables.removeLast(tables.count - count)
        bytes.removeLast(bytes.count - count * 96)
    }

    package func append(_ table: P256FixedBase, digest: UnsafePointer<UInt8>, signature: UnsafeBufferPointer<UInt8>) {
        tables.append(table)
        bytes.append(contentsOf: UnsafeBufferPointer(start: digest, count: 32))
        bytes.append(contentsOf: signature)
    }

    /// Makes every waiting check and forgets them: `result[i]` tells whether the
    /// `i`-th signature verified.
    package func check() -> [Bool] {
        let count = tables.count
        defer {
            tables.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
            ERR_clear_error()
        }
        guard count > 0 else { return [] }
        var valid = [Bool](repeating: false, count: count)
        guard reserve(count), let inverse, let scratch = scratch ?? P256FixedBase.Scratch(curve: tables[0].curve) else { return valid }
        self.scratch = scratch
        let order = tables[0].order
        let context = scratch.context
        func r(_ i: Int) -> OpaquePointer { numbers[3 * i] }
        func s(_ i: Int) -> OpaquePointer { numbers[3 * i + 1] }
        func product(_ i: Int) -> OpaquePointer { numbers[3 * i + 2] }
        bytes.withUnsafeBufferPointer { all in
            let base = all.baseAddress!
            // r and s of each; one out of [1, n - 1] fails, and takes part as s = 1.
            for i in 0..<count {
                let signature = base + 96 * i + 32
                guard BN_bin2bn(signature, 32, r(i)) != nil, BN_bin2bn(signature + 32, 32, s(i)) != nil else { continue }
                valid[i] = Self.inRange(r(i), below: order) && Self.inRange(s(i), below: order)
                if !valid[i] { BN_set_word(s(i), 1) }
            }
            // The running products, and the inverse of the last.
            guard BN_copy(product(0), s(0)) != nil else { valid = [Bool](repeating: false, count: count); return }
            for i in stride(from: 1, to: count, by: 1) {
                guard BN_mod_mul(product(i), product(i - 1), s(i), order, context) == 1 else {
                    valid = [Bool](repeating: false, count: count)
                    return
                }
            }
            guard BN_mod_inverse(inverse, product(count - 1), order, context) != nil else {
                valid = [Bool](repeating: false, count: count)
                return
            }
            // From the last down: w_i = (s_0 ... s_i)⁻¹ · (s_0 ... s_(i-1)); then drop s_i from the inverse.
            for i in stride(from: count - 1, through: 0, by: -1) {
                let w = scratch.w
                if i > 0 {
                    guard BN_mod_mul(w, inverse, product(i - 1), order, context) == 1,
                        BN_mod_mul(inverse, inverse, s(i), order, context) == 1
                    else {
                        valid[0...i] = ArraySlice(repeating: false, count: i + 1)
                        return
                    }
                } else {
                    guard BN_copy(w, inverse) != nil else { valid[0] = false; return }
                }
                if valid[i] { valid[i] = scratch.check(digest: base + 96 * i, r: r(i), w: w, with: tables[i]) }
            }
        }
        return valid
    }

    /// Makes room for `count` checks' numbers.
    private func reserve(_ count: Int) -> Bool {
        if inverse == nil { inverse = BN_new() }
        while numbers.count < 3 * count {
            guard let number = BN_new() else { return false }
            numbers.append(number)
        }
        return inverse != nil
    }

    /// Whether `value` lies in [1, n − 1].
    private static func inRange(_ value: OpaquePointer, below order: OpaquePointer) -> Bool {
        BN_is_zero(value) == 0 && BN_is_negative(value) == 0 && BN_cmp(value, order) < 0
    }
}

extension DeferredSignatures {
    /// A few batches kept for reuse (each holds its numbers from one use to the next), for
    /// callers that check one JWS's signatures together and then let the batch go.
    package final class Pool: Sendable {
        private let idle = Mutex<[DeferredSignatures]>([])

        package init() {}

        /// A batch with no check waiting.
        package func borrow() -> DeferredSignatures { idle.withLock { $0.popLast() } ?? DeferredSignatures() }

        /// Takes back `batch` (its checks made or dropped), keeping at most eight.
        package func giveBack(_ batch: DeferredSignatures) {
            precondition(batch.count == 0, "a batch given back with checks waiting")
            idle.withLock { if $0.count < 8 { $0.append(batch) } }
        }
    }
}
