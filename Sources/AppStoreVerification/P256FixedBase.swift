internal import COpenSSL

/// ES256 verification for one P-256 public key that signs many times (Apple signs every
/// JWS with one leaf certificate for a year or more), with a table of the key's
/// multiples computed once.
///
/// ECDSA verification computes `R = u1·G + u2·Q` and accepts when `x(R) mod n == r`.
/// OpenSSL's `EVP_PKEY_verify` multiplies the generator `G` from a static table, but has
/// no table for the key `Q`: the multiple of `Q` costs about three quarters of every
/// verification. Here `u2·Q` is computed in a copy of the P-256 group whose generator
/// is `Q`, after `EC_GROUP_precompute_mult` built that group's table (about 150 KB and
/// 15 ms, once per key), so both multiplications take the fast fixed-base path; and
/// `x(R)` is compared in Jacobian coordinates (`X == r·Z²`, or `(r + n)·Z²` when that is
/// below `p`), which saves the field inversion of the affine conversion. Every step is
/// OpenSSL's arithmetic; the steps are those of SEC 1 section 4.1.4, as OpenSSL's own
/// `ECDSA_do_verify` takes them, and the result is the same for every signature (a test
/// compares the two on valid, altered and out-of-range signatures).
///
/// Thread-safe: the groups are only read; each call borrows its numbers and points from
/// a small pool.
package final class P256FixedBase: @unchecked Sendable {
    /// P-256 with its standard generator.
    let curve: OpaquePointer
    /// P-256 with the key as its generator, and that generator's multiples precomputed.
    private let keyCurve: OpaquePointer
    /// The field prime p.
    private let prime: OpaquePointer
    /// p − n: an `r` below it may also be the reduction of the x-coordinate `r + n`.
    private let primeMinusOrder: OpaquePointer
    private let pool = DeferredSignatures.Pool()

    /// Builds the table for `key` (an `EVP_PKEY` holding a P-256 public key), or `nil`
    /// when OpenSSL cannot (the caller then verifies through EVP as before).
    package init?(key: OpaquePointer) {
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        var encoded = [UInt8](repeating: 0, count: 133)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &encoded, encoded.count, &length) == 1,
            let curve = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)
        else {
            ERR_clear_error()
            return nil
        }
        guard let keyCurve = EC_GROUP_dup(curve), let point = EC_POINT_new(curve), let prime = BN_new(),
            let primeMinusOrder = BN_new()
        else {
            ERR_clear_error()
            EC_GROUP_free(curve)
            return nil
        }
        defer { EC_POINT_free(point) }
        self.curve = curve
        self.keyCurve = keyCurve
        self.prime = prime
        self.primeMinusOrder = primeMinusOrder
        let order = EC_GROUP_get0_order(curve)
        guard EC_POINT_oct2point(curve, point, encoded, length, context) == 1,
            EC_POINT_is_at_infinity(curve, point) == 0,
            EC_GROUP_set_generator(keyCurve, point, order, BN_value_one()) == 1,
            copenssl_ec_group_precompute_mult(keyCurve, context) == 1,
            EC_GROUP_get_curve(curve, prime, nil, nil, context) == 1,
            BN_sub(primeMinusOrder, prime, order) == 1
        else {
            ERR_clear_error()
            return nil
        }
    }

    deinit {
        EC_GROUP_free(keyCurve)
        EC_GROUP_free(curve)
        BN_free(prime)
        BN_free(primeMinusOrder)
    }

    /// Whether the raw ES256 signature `r || s` (64 bytes) verifies over the 32-byte `digest`:
    /// a batch of one (``DeferredSignatures``, borrowed from a small pool), so that one piece
    /// of code reads, range-checks and inverts every signature, alone or batched.
    package func verify(digest: UnsafePointer<UInt8>, signature: UnsafeBufferPointer<UInt8>) -> Bool {
        guard signature.count == 64 else { return false }
        let batch = pool.borrow()
        batch.append(self, digest: digest, signature: signature)
        let valid = batch.check().first ?? false
        pool.giveBack(batch)
        return valid
    }

    /// The group order n.
    var order: OpaquePointer { EC_GROUP_get0_order(curve) }

    /// The numbers and points verifications work on, allocated once. Its points are of
    /// P-256 and serve every key's table (OpenSSL's groups of one curve share their points).
    final class Scratch: @unchecked Sendable {
        let context: OpaquePointer
        private let numbers: [OpaquePointer]
        /// `u1·G`, then `R`.
        private let sum: OpaquePointer
        /// `u2·Q`.
        private let keyMultiple: OpaquePointer
        /// Where a caller puts `s⁻¹`.
        var w: OpaquePointer { numbers[5] }

        init?(curve: OpaquePointer) {
            guard let context = BN_CTX_new() else { return nil }
            var numbers: [OpaquePointer] = []
            for _ in 0..<6 {
                guard let number = BN_new() else { break }
                numbers.append(number)
            }
            guard numbers.count == 6, let sum = EC_POINT_new(curve), let keyMultiple = EC_POINT_new(curve) else {
                numbers.forEach { BN_free($0) }
                BN_CTX_free(context)
                ERR_clear_error()
                return nil
            }
            self.context = context
            self.numbers = numbers
            self.sum = sum
            self.keyMultiple = keyMultiple
        }

        deinit {
            numbers.forEach { BN_free($0) }
            EC_POINT_free(sum)
            EC_POINT_free(keyMultiple)
            BN_CTX_free(context)
        }

        /// Whether `R = u1·G + u2·Q` has `x(R) mod n == r`, with `u1 = e·w`, `u2 = r·w`,
        /// `w = s⁻¹` given, `e` the 256-bit `digest` taken whole (as long as n), and `Q` the table's key.
        func check(digest: UnsafePointer<UInt8>, r: OpaquePointer, w: OpaquePointer, with table: P256FixedBase) -> Bool {
            // `t` takes `e`'s place once `e` is used.
            let (e, u1, u2, x, z, t) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[0])
            let order = table.order
            guard BN_bin2bn(digest, 32, e) != nil,
                BN_mod_mul(u1, e, w, order, context) == 1,
                BN_mod_mul(u2, r, w, order, context) == 1
            else { return false }
            // R = u1·G + u2·Q, each a fixed-base multiplication.
            guard EC_POINT_mul(table.curve, sum, u1, nil, nil, context) == 1,
                EC_POINT_mul(table.keyCurve, keyMultiple, u2, nil, nil, context) == 1,
                EC_POINT_add(table.curve, sum, sum, keyMultiple, context) == 1,
                EC_POINT_is_at_infinity(table.curve, sum) == 0,
                copenssl_ec_point_get_jacobian(table.curve, sum, x, nil, z, context) == 1,
                BN_nnmod(x, x, table.prime, context) == 1
            else { return false }
            // x(R) = X / Z² (mod p) lies in [0, p); x(R) mod n == r when x(R) is r, or r + n (below p).
            guard BN_mod_sqr(z, z, table.prime, context) == 1, BN_mod_mul(t, r, z, table.prime, context) == 1 else { return false }
            if BN_cmp(t, x) == 0 { return true }
            guard BN_cmp(r, table.primeMinusOrder) < 0, BN_add(t, r, order) == 1, BN_mod_mul(t, t, z, table.prime, context) == 1
            else { return false }
            return BN_cmp(t, x) == 0
        }
    }

}
