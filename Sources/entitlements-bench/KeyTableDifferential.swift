@preconcurrency import AppStoreVerification
import COpenSSL
import Dispatch
import Synchronization
import TestPKI

/// The engine's signature check with a key's table (``P256FixedBase``, batched by
/// ``DeferredSignatures`` as the ingest lanes batch it) held to OpenSSL's own
/// `EVP_PKEY_verify` on many random signatures, valid and altered.
///
/// A fresh P-256 key signs random digests. Each signature gives four checks:
/// - the signature as made (valid);
/// - its other valid form, `r || n − s`;
/// - one bit flipped in the digest, `r` or `s`;
/// - a value out of place: `r` and `s` drawn at random (now and then `n` or more),
///   `r` or `s` zero, `n` or `n − 1`, near 2²⁵⁶, `r` and `s` swapped, or the signature
///   of the digest before.
///
/// OpenSSL decides each check from the DER form it makes itself (`i2d_ECDSA_SIG`), one at a
/// time; the table decides the same checks in batches of ``ECDSALimit/lanesBatch``. Any
/// disagreement fails the stage, and so does OpenSSL finding fewer than half valid (the
/// first two checks of every signature must pass).
enum KeyTableDifferential {
    struct Figures {
        var checks = 0
        var valid = 0
        var disagreements = 0
        /// The first disagreements, described.
        var examples: [String] = []
        var seconds = 0.0
    }

    /// Runs about `checks` checks (a multiple of 4 per thread) on `threads` threads, from `seed`.
    static func run(checks: Int, threads: Int, seed: UInt64) throws -> Figures {
        let key = try makeKey()
        defer { EVP_PKEY_free(key) }
        guard let table = P256FixedBase(key: key) else { throw BenchFailure("the key's table could not be built") }
        let lanes = max(1, threads)
        let perLane = max(1, checks / (4 * lanes))
        let results = Mutex(Figures())
        let failure = Mutex<String?>(nil)
        let boxedKey = UncheckedKey(key)
        let start = Clock.now()
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            do {
                let figures = try Lane(key: boxedKey.pointer, table: table).run(signatures: perLane, seed: seed &+ UInt64(lane) &* 0x9E37_79B9)
                results.withLock { all in
                    all.checks += figures.checks
                    all.valid += figures.valid
                    all.disagreements += figures.disagreements
                    all.examples += figures.examples.prefix(max(0, 10 - all.examples.count))
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        if let message = failure.withLock({ $0 }) { throw BenchFailure(message) }
        var figures = results.withLock { $0 }
        figures.seconds = Clock.now() - start
        return figures
    }

    private struct UncheckedKey: @unchecked Sendable {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
    }

    private static func makeKey() throws -> OpaquePointer {
        guard let keygen = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw BenchFailure("OpenSSL has no EC") }
        defer { EVP_PKEY_CTX_free(keygen) }
        var generated: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(keygen) == 1, EVP_PKEY_CTX_set_group_name(keygen, "P-256") == 1,
            EVP_PKEY_generate(keygen, &generated) == 1, let key = generated
        else { throw BenchFailure("OpenSSL cannot make a P-256 key") }
        return key
    }

    /// One thread's signer, OpenSSL verifier and batch of deferred checks.
    private final class Lane {
        let table: P256FixedBase
        let signer: OpaquePointer
        let verifier: OpaquePointer
        let deferred = DeferredSignatures()
        /// The group order n, big-endian.
        let order: [UInt8]
        /// Per check: the digest, the raw `r || s`, and what OpenSSL answered.
        var digests: [UInt8] = []
        var signatures: [UInt8] = []
        var expected: [Bool] = []
        var names: [String] = []
        var figures = Figures()

        init(key: OpaquePointer, table: P256FixedBase) throws {
            self.table = table
            guard let signer = EVP_PKEY_CTX_new_from_pkey(nil, key, nil), EVP_PKEY_sign_init(signer) == 1 else {
                throw BenchFailure("no signing context")
            }
            guard let verifier = EVP_PKEY_CTX_new_from_pkey(nil, key, nil), EVP_PKEY_verify_init(verifier) == 1 else {
                EVP_PKEY_CTX_free(signer)
                throw BenchFailure("no verifying context")
            }
            self.signer = signer
            self.verifier = verifier
            guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { throw BenchFailure("no P-256 group") }
            defer { EC_GROUP_free(group) }
            var order = [UInt8](repeating: 0, count: 32)
            guard BN_bn2binpad(EC_GROUP_get0_order(group), &order, 32) == 32 else { throw BenchFailure("no group order") }
            self.order = order
        }

        deinit {
            EVP_PKEY_CTX_free(signer)
            EVP_PKEY_CTX_free(verifier)
        }

        func run(signatures count: Int, seed: UInt64) throws -> Figures {
            var random = SeededRandom(seed: seed)
            var previous: [UInt8]? = nil
            for _ in 0..<count {
                var digest = [UInt8](repeating: 0, count: 32)
                for index in 0..<32 { digest[index] = UInt8(truncatingIfNeeded: random.next()) }
                let signature = try sign(digest)
                let r = Array(signature[0..<32])
                let s = Array(signature[32..<64])
                add("valid", digest, signature)
                add("n - s", digest, r + BigEndianArithmetic.subtract(order, s))
                // One bit flipped.
                let bit = Int(random.next() % 768)
                var flipped = digest + signature
                flipped[bit / 8] ^= UInt8(1 << (bit % 8))
                add(bit < 256 ? "digest bit flipped" : bit < 512 ? "r bit flipped" : "s bit flipped", Array(flipped[0..<32]), Array(flipped[32...]))
                // A value out of place.
                let zero = [UInt8](repeating: 0, count: 32)
                switch random.next() % 8 {
                case 0:
                    var noise = [UInt8](repeating: 0, count: 64)
                    for index in 0..<64 { noise[index] = UInt8(truncatingIfNeeded: random.next()) }
                    add("random r and s", digest, noise)
                case 1: add(random.next() % 2 == 0 ? "r = 0" : "s = 0", digest, random.next() % 2 == 0 ? zero + s : r + zero)
                case 2: add("r = n", digest, order + s)
                case 3: add("s = n", digest, r + order)
                case 4:
                    // The largest value in range.
                    let nMinusOne = BigEndianArithmetic.subtract(order, zero.dropLast() + [1])
                    add(random.next() % 2 == 0 ? "r = n - 1" : "s = n - 1", digest, random.next() % 2 == 0 ? nMinusOne + s : r + nMinusOne)
                case 5: add("r and s swapped", digest, s + r)
                case 6:
                    if let previous { add("the digest before's signature", digest, previous) } else { add("s = n", digest, r + order) }
                default:
                    var ones = [UInt8](repeating: 0xFF, count: 32)
                    ones[31] = UInt8(truncatingIfNeeded: random.next())
                    add(random.next() % 2 == 0 ? "r near 2^256" : "s near 2^256", digest, random.next() % 2 == 0 ? ones + s : r + ones)
                }
                previous = signature
                if expected.count >= ECDSALimit.lanesBatch { flush() }
            }
            flush()
            return figures
        }

        /// A raw `r || s` signature of `digest`.
        func sign(_ digest: [UInt8]) throws -> [UInt8] {
            var der = [UInt8](repeating: 0, count: 80)
            var length = der.count
            guard EVP_PKEY_sign(signer, &der, &length, digest, 32) == 1 else { throw BenchFailure("EVP_PKEY_sign failed") }
            let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var cursor = buffer.baseAddress
                return d2i_ECDSA_SIG(nil, &cursor, length)
            }
            guard let parsed else { throw BenchFailure("OpenSSL's signature does not parse") }
            defer { ECDSA_SIG_free(parsed) }
            var raw = [UInt8](repeating: 0, count: 64)
            guard raw.withUnsafeMutableBufferPointer({ buffer in
                BN_bn2binpad(ECDSA_SIG_get0_r(parsed), buffer.baseAddress!, 32) == 32
                    && BN_bn2binpad(ECDSA_SIG_get0_s(parsed), buffer.baseAddress! + 32, 32) == 32
            }) else { throw BenchFailure("a signature's r or s does not fit 32 bytes") }
            return raw
        }

        /// Records a check and OpenSSL's answer to it.
        func add(_ name: String, _ digest: [UInt8], _ signature: [UInt8]) {
            digests += digest
            signatures += signature
            expected.append(openSSL(digest, signature))
            names.append(name)
        }

        /// OpenSSL's answer: the DER it makes of `r` and `s`, through `EVP_PKEY_verify`.
        func openSSL(_ digest: [UInt8], _ signature: [UInt8]) -> Bool {
            defer { ERR_clear_error() }
            guard let sig = ECDSA_SIG_new() else { return false }
            defer { ECDSA_SIG_free(sig) }
            guard let r = BN_bin2bn(signature, 32, nil) else { return false }
            guard let s = signature.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + 32, 32, nil) }) else {
                BN_free(r)
                return false
            }
            guard ECDSA_SIG_set0(sig, r, s) == 1 else {
                BN_free(r)
                BN_free(s)
                return false
            }
            var der: UnsafeMutablePointer<UInt8>? = nil
            let length = i2d_ECDSA_SIG(sig, &der)
            guard length > 0, let der else { return false }
            defer { copenssl_free(der) }
            return EVP_PKEY_verify(verifier, der, Int(length), digest, 32) == 1
        }

        /// The table's answers for the recorded checks, in one batch, compared with OpenSSL's.
        func flush() {
            guard !expected.isEmpty else { return }
            digests.withUnsafeBufferPointer { digests in
                signatures.withUnsafeBufferPointer { signatures in
                    for index in expected.indices {
                        deferred.append(
                            table, digest: digests.baseAddress! + 32 * index,
                            signature: UnsafeBufferPointer(rebasing: signatures[(64 * index)..<(64 * index + 64)]))
                    }
                }
            }
            let answers = deferred.check()
            for (index, answer) in answers.enumerated() {
                figures.checks += 1
                if expected[index] { figures.valid += 1 }
                let mustPass = names[index] == "valid" || names[index] == "n - s"
                if answer != expected[index] || (mustPass && !expected[index]) {
                    figures.disagreements += 1
                    if figures.examples.count < 10 {
                        figures.examples.append("\(names[index]): OpenSSL \(expected[index]), table \(answer)")
                    }
                }
            }
            digests.removeAll(keepingCapacity: true)
            signatures.removeAll(keepingCapacity: true)
            expected.removeAll(keepingCapacity: true)
            names.removeAll(keepingCapacity: true)
        }
    }
}
