internal import COpenSSL
import Synchronization

/// An owned OpenSSL `EVP_PKEY` holding a P-256 public key, and ES256 verification with it.
///
/// An `EVP_PKEY` may be used by several threads at once for verification. Each call
/// borrows an `EVP_PKEY_CTX` already set up for verification from a small pool (a key
/// lives as long as its cached chain, so setting a context up once per key instead of
/// once per signature saves ~7 % of a warm verification); one context is never used by
/// two threads at once. Once the key has checked `keyTableAfter` signatures, a table of
/// its multiples is built (``P256FixedBase``) and every later check uses it instead.
final class P256PublicKey: @unchecked Sendable {
    let pointer: OpaquePointer
    private let contexts = Mutex(ContextPool())
    /// Signatures to check through EVP before the table is built; `nil`: never.
    private let keyTableAfter: Int?

    /// Idle verification contexts of this key, and its table once built.
    private struct ContextPool: ~Copyable {
        var idle: [OpaquePointer] = []
        var checked = 0
        var table: Table = .notYet
        static let capacity = 8
        deinit { for context in idle { EVP_PKEY_CTX_free(context) } }
    }

    private enum Table {
        case notYet
        case building
        case built(P256FixedBase)
        /// OpenSSL could not build it: EVP it stays.
        case unavailable
    }

    /// How the next check is made: with the table, or with a pooled EVP context (its
    /// address; `nil` to make one), after which the caller builds the table when told to.
    private enum Route: Sendable {
        case table(P256FixedBase)
        case evp(context: UInt?, buildTable: Bool)
    }

    /// Takes ownership of one reference to `key`.
    /// - Parameter keyTableAfter: after how many checked signatures to build the key's
    ///   table (``VerifierConfiguration/keyTableAfter``); `nil` never builds it.
    init(owning key: OpaquePointer, keyTableAfter: Int? = nil) {
        pointer = key
        self.keyTableAfter = keyTableAfter
    }

    deinit { EVP_PKEY_free(pointer) }

    /// Whether the table of this key's multiples is built and in use.
    var usesTable: Bool {
        contexts.withLock { pool in
            if case .built = pool.table { return true }
            return false
        }
    }

    private func route() -> Route {
        let threshold = keyTableAfter
        return contexts.withLock { pool -> Route in
            if case .built(let table) = pool.table { return .table(table) }
            var build = false
            if case .notYet = pool.table, let threshold {
                pool.checked += 1
                if pool.checked > threshold {
                    pool.table = .building
                    build = true
                }
            }
            return .evp(context: pool.idle.popLast().map { UInt(bitPattern: $0) }, buildTable: build)
        }
    }

    /// Builds the table (on the thread whose check reached the threshold; the others go
    /// on through EVP meanwhile).
    private func buildTable() {
        let table = P256FixedBase(key: pointer)
        contexts.withLock { pool in pool.table = table.map { .built($0) } ?? .unavailable }
    }

    /// Makes a context ready for `EVP_PKEY_verify`; `nil` if OpenSSL cannot.
    private func makeContext() -> OpaquePointer? {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            ERR_clear_error()
            return nil
        }
        guard EVP_PKEY_verify_init(context) == 1 else {
            ERR_clear_error()
            EVP_PKEY_CTX_free(context)
            return nil
        }
        return context
    }

    /// Returns a context to the pool (or frees it when the pool is full).
    private func giveBack(_ context: OpaquePointer) {
        let address = UInt(bitPattern: context)
        let kept = contexts.withLock { pool -> Bool in
            guard pool.idle.count < ContextPool.capacity, let context = OpaquePointer(bitPattern: address) else { return false }
            pool.idle.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
    }

    /// Whether this is an EC key on the P-256 curve (`prime256v1`).
    var isP256: Bool {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return false
        }
        let group = String(decoding: name[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256" || group == "secp256r1"
    }

    /// Verifies a JWS ES256 signature: `signature` is the raw 64-byte `r || s` (RFC 7518
    /// section 3.4) over the SHA-256 of the signing input (`header.payload`), which `digest`
    /// writes into the 32-byte buffer it is given.
    /// - Parameter deferred: where a check with the key's table is put off to, reported as
    ///   passed for now (see ``DeferredSignatures``); `nil` checks at once.
    func verifyES256(
        signature: UnsafeBufferPointer<UInt8>, deferring deferred: DeferredSignatures? = nil,
        digest writeDigest: (UnsafeMutablePointer<UInt8>) -> Void
    ) -> Bool {
        guard signature.count == 64 else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32 + 80) { scratch -> Bool in
            let digest = scratch.baseAddress!
            writeDigest(digest)
            switch route() {
            case .table(let table):
                if let deferred {
                    deferred.append(table, digest: digest, signature: signature)
                    return true
                }
                return table.verify(digest: digest, signature: signature)
            case .evp(let pooled, let buildTable):
                let valid = verifyEVP(digest: digest, signature: signature, der: digest + 32, pooled: pooled)
                if buildTable { self.buildTable() }
                return valid
            }
        }
    }

    /// `EVP_PKEY_verify` of the DER form of `signature`, with the pooled context at `pooled` or a new one.
    private func verifyEVP(
        digest: UnsafeMutablePointer<UInt8>, signature: UnsafeBufferPointer<UInt8>, der: UnsafeMutablePointer<UInt8>, pooled: UInt?
    ) -> Bool {
        let derLength = Self.encodeECDSASignature(signature, into: der)
        guard let context = pooled.flatMap({ OpaquePointer(bitPattern: $0) }) ?? makeContext() else { return false }
        let result = EVP_PKEY_verify(context, der, derLength, digest, 32)
        if result == 1 || result == 0 {
            // 0 is a signature that does not verify: the context is still good.
            if result == 0 { ERR_clear_error() }
            giveBack(context)
        } else {
            // An internal error: do not reuse a context in an unknown state.
            ERR_clear_error()
            EVP_PKEY_CTX_free(context)
        }
        return result == 1
    }

    /// DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` from raw `r || s`
    /// (each 32 bytes, big-endian). Writes at most 72 bytes; returns the length.
    static func encodeECDSASignature(_ raw: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int {
        var length = 2
        for half in 0..<2 {
            let base = half * 32
            var start = 0
            while start < 31 && raw[base + start] == 0 { start += 1 }
            let pad = raw[base + start] & 0x80 != 0
            let integerLength = 32 - start + (pad ? 1 : 0)
            output[length] = 0x02
            output[length + 1] = UInt8(integerLength)
            length += 2
            if pad {
                output[length] = 0
                length += 1
            }
            for index in start..<32 {
                output[length] = raw[base + index]
                length += 1
            }
        }
        output[0] = 0x30
        output[1] = UInt8(length - 2)
        return length
    }
}
