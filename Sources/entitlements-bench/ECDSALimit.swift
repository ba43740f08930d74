@preconcurrency import AppStoreVerification
import COpenSSL
import Dispatch
import Synchronization

/// The machine's limit: bare P-256 ECDSA verifications through OpenSSL on one core.
///
/// A fresh P-256 key signs one SHA-256 digest; the same `EVP_PKEY_CTX` (initialised
/// once) then verifies it over and over. That is the least work OpenSSL can do per
/// ES256 signature, so `rate / 3` bounds what any verifier can do on one core for a
/// notification carrying a transaction and a renewal info (three signatures).
///
/// The second figure is the same verification with a new context per call
/// (`EVP_PKEY_CTX_new_from_pkey` + `EVP_PKEY_verify_init`, as a verifier that shares
/// one key across threads does), to show what that costs.
final class ECDSALimit: @unchecked Sendable {
    struct Figures {
        var bare: Rate
        /// Verifications per second of all cores verifying at once (``Machine/cores`` threads).
        var allCores: Rate
        var freshContext: Rate
        var sha256: Rate
        var openSSLVersion: String
        /// This engine's check with a table of the key's multiples, one at a time, 1 core.
        var table = Rate.zero
        /// The same with inversions batched as the ingest lanes batch them, 1 core.
        var tableBatched = Rate.zero
        /// The same on all cores at once.
        var tableBatchedAllCores = Rate.zero

        /// Measures the three key-table figures with `limit`.
        mutating func measureTables(_ limit: ECDSALimit, seconds: Double) throws {
            table = try limit.keyTable(seconds: seconds)
            tableBatched = try limit.keyTableBatched(seconds: seconds, threads: 1)
            tableBatchedAllCores = try limit.keyTableBatched(seconds: seconds, threads: Machine.cores)
        }
    }

    private let key: OpaquePointer
    private let verifier: OpaquePointer
    private let digest: [UInt8]
    private let signature: [UInt8]
    /// The signature as a JWS carries it: `r || s`, 32 bytes each.
    private let rawSignature: [UInt8]
    private let table: P256FixedBase
    let openSSLVersion: String
    /// Checks the ingest lanes batch: a batch of 256 notifications, 3 signatures each.
    static let lanesBatch = 768

    init() throws {
        guard let keygen = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw BenchFailure("OpenSSL has no EC") }
        defer { EVP_PKEY_CTX_free(keygen) }
        guard EVP_PKEY_keygen_init(keygen) == 1, EVP_PKEY_CTX_set_group_name(keygen, "P-256") == 1 else {
            throw BenchFailure("OpenSSL cannot make P-256 keys")
        }
        var generated: OpaquePointer? = nil
        guard EVP_PKEY_generate(keygen, &generated) == 1, let key = generated else { throw BenchFailure("EVP_PKEY_generate failed") }
        self.key = key

        var digest = [UInt8](repeating: 0, count: 32)
        let message = Array("entitlements-bench".utf8)
        var digestLength: UInt32 = 0
        guard EVP_Digest(message, message.count, &digest, &digestLength, EVP_sha256(), nil) == 1 else {
            EVP_PKEY_free(key)
            throw BenchFailure("SHA-256 failed")
        }
        self.digest = digest

        // Sign once.
        guard let signer = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { EVP_PKEY_free(key); throw BenchFailure("no signing context") }
        defer { EVP_PKEY_CTX_free(signer) }
        var signatureLength = 0
        var signature = [UInt8](repeating: 0, count: 80)
        guard EVP_PKEY_sign_init(signer) == 1, EVP_PKEY_sign(signer, nil, &signatureLength, digest, 32) == 1,
            EVP_PKEY_sign(signer, &signature, &signatureLength, digest, 32) == 1
        else {
            EVP_PKEY_free(key)
            throw BenchFailure("EVP_PKEY_sign failed")
        }
        self.signature = Array(signature.prefix(signatureLength))
        var raw = [UInt8](repeating: 0, count: 64)
        let parsed: OpaquePointer? = signature.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, signatureLength)
        }
        guard let parsed, let table = P256FixedBase(key: key) else {
            EVP_PKEY_free(key)
            throw BenchFailure("cannot read the signature or build the key's table")
        }
        defer { ECDSA_SIG_free(parsed) }
        raw.withUnsafeMutableBufferPointer { out in
            _ = BN_bn2binpad(ECDSA_SIG_get0_r(parsed), out.baseAddress, 32)
            _ = BN_bn2binpad(ECDSA_SIG_get0_s(parsed), out.baseAddress! + 32, 32)
        }
        rawSignature = raw
        self.table = table

        // One context for the bare figure, initialised once.
        guard let verifier = EVP_PKEY_CTX_new_from_pkey(nil, key, nil), EVP_PKEY_verify_init(verifier) == 1 else {
            EVP_PKEY_free(key)
            throw BenchFailure("EVP_PKEY_verify_init failed")
        }
        self.verifier = verifier
        openSSLVersion = OpenSSL_version(Int32(OPENSSL_VERSION)).map { String(cString: $0) } ?? "unknown"
    }

    deinit {
        EVP_PKEY_CTX_free(verifier)
        EVP_PKEY_free(key)
    }

    /// Verifications with the one context, again and again.
    func bare(seconds: Double) throws -> Rate {
        var failures = 0
        let run = timed([0], seconds: seconds, minimum: 200) { _ in
            if EVP_PKEY_verify(verifier, signature, signature.count, digest, 32) != 1 { failures += 1 }
        }
        guard failures == 0 else { throw BenchFailure("bare ECDSA verification failed \(failures) times") }
        return Rate(run)
    }

    /// Verifications on `threads` threads at once, each with a context of its own:
    /// what all the cores together can do (on this machine two busy cores each verify
    /// a few percent slower than one alone, so twice the one-core rate overstates it).
    func allCores(seconds: Double, threads: Int) throws -> Rate {
        try Self.onThreads(threads, failure: "ECDSA verification on all cores failed") {
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil), EVP_PKEY_verify_init(context) == 1 else { return (0, 0, 1) }
            defer { EVP_PKEY_CTX_free(context) }
            var failures = 0
            let run = timed([0], seconds: seconds, minimum: 200) { _ in
                if EVP_PKEY_verify(context, signature, signature.count, digest, 32) != 1 { failures += 1 }
            }
            return (run.count, run.cpuSeconds, failures)
        }
    }

    /// `body` on `threads` threads at once, each returning what it counted, its CPU time and
    /// its failures: the rate of them all together over the wall-clock time.
    static func onThreads(
        _ threads: Int, failure: String, _ body: @Sendable () -> (count: Int, cpu: Double, failures: Int)
    ) throws -> Rate {
        let results = Mutex([(count: Int, cpu: Double, failures: Int)]())
        let start = Clock.now()
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            let result = body()
            results.withLock { $0.append(result) }
        }
        let wall = Clock.now() - start
        let all = results.withLock { $0 }
        guard all.allSatisfy({ $0.failures == 0 }) else { throw BenchFailure(failure) }
        return Rate((count: all.reduce(0) { $0 + $1.count }, seconds: wall, cpuSeconds: all.reduce(0) { $0 + $1.cpu }))
    }

    /// This engine's warm check: the key's table of multiples (``P256FixedBase``), one at a time.
    func keyTable(seconds: Double) throws -> Rate {
        var failures = 0
        let run = timed([0], seconds: seconds, minimum: 200) { _ in
            let valid = digest.withUnsafeBufferPointer { digest in
                rawSignature.withUnsafeBufferPointer { table.verify(digest: digest.baseAddress!, signature: $0) }
            }
            if !valid { failures += 1 }
        }
        guard failures == 0 else { throw BenchFailure("the key table's check failed \(failures) times") }
        return Rate(run)
    }

    /// The same with the checks deferred and made a lanes' batch at a time (one modular
    /// inversion per batch: ``DeferredSignatures``), on `threads` threads at once.
    func keyTableBatched(seconds: Double, threads: Int) throws -> Rate {
        try Self.onThreads(threads, failure: "batched checks with the key's table failed") {
            let deferred = DeferredSignatures()
            var failures = 0
            let run = timed([0], seconds: seconds, minimum: 1) { _ in
                digest.withUnsafeBufferPointer { digest in
                    rawSignature.withUnsafeBufferPointer { signature in
                        for _ in 0..<Self.lanesBatch { deferred.append(table, digest: digest.baseAddress!, signature: signature) }
                    }
                }
                failures += deferred.check().filter { !$0 }.count
            }
            return (run.count * Self.lanesBatch, run.cpuSeconds, failures)
        }
    }

    /// A new context per verification.
    func freshContext(seconds: Double) throws -> Rate {
        var failures = 0
        let run = timed([0], seconds: seconds, minimum: 100) { _ in
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { failures += 1; return }
            defer { EVP_PKEY_CTX_free(context) }
            if EVP_PKEY_verify_init(context) != 1 || EVP_PKEY_verify(context, signature, signature.count, digest, 32) != 1 {
                failures += 1
            }
        }
        guard failures == 0 else { throw BenchFailure("ECDSA verification with a fresh context failed \(failures) times") }
        return Rate(run)
    }

    /// SHA-256 of a typical signing input (a transaction JWS: ~3.3 KB of header.payload).
    func sha256(seconds: Double) -> Rate {
        let input = [UInt8](repeating: 0x41, count: 3_300)
        let md = EVP_sha256()
        return Rate(
            timed([0], seconds: seconds, minimum: 100) { _ in
                var out = [UInt8](repeating: 0, count: 32)
                var length: UInt32 = 0
                _ = EVP_Digest(input, input.count, &out, &length, md, nil)
            })
    }

    static func measure(seconds: Double) throws -> Figures {
        let limit = try ECDSALimit()
        var figures = Figures(
            bare: try limit.bare(seconds: seconds), allCores: try limit.allCores(seconds: seconds, threads: Machine.cores), freshContext: try limit.freshContext(seconds: seconds / 2),
            sha256: limit.sha256(seconds: seconds / 4), openSSLVersion: limit.openSSLVersion)
        try figures.measureTables(limit, seconds: seconds / 2)
        return figures
    }
}
