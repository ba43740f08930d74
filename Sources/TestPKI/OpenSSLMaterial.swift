internal import COpenSSL
import JSONAndBase64
import Synchronization

/// Owned OpenSSL keys and certificates of one test PKI, freed on deinit.
///
/// Signs with the leaf key through signing contexts made once and kept in a pool (each
/// used by one thread at a time): making one per signature (`EVP_DigestSignInit`) costs
/// OpenSSL's lookups of the algorithms again every time.
final class Material: @unchecked Sendable {
    let rootKey: OpaquePointer
    let intermediateKey: OpaquePointer
    let leafKey: OpaquePointer
    let root: OpaquePointer
    let intermediate: OpaquePointer
    let leaf: OpaquePointer
    /// The bytes of each of a leaf signature's `r` and `s`: the leaf curve's size.
    let coordinateSize: Int
    /// `EVP_PKEY_CTX`s of the leaf key ready for `EVP_PKEY_sign`, not in use.
    private let signingContexts = Mutex<[SigningContext]>([])

    /// An `EVP_PKEY_CTX` passed between threads through the pool, used by one at a time.
    private struct SigningContext: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Takes ownership of one reference to each.
    init(rootKey: OpaquePointer, intermediateKey: OpaquePointer, leafKey: OpaquePointer,
         root: OpaquePointer, intermediate: OpaquePointer, leaf: OpaquePointer) {
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        coordinateSize = (Int(EVP_PKEY_get_bits(leafKey)) + 7) / 8
    }

    /// The raw `r || s` ECDSA signature by the leaf key of a SHA-256 `digest`.
    func signDigest(_ digest: [UInt8]) -> [UInt8] {
        let context = signingContexts.withLock { $0.popLast() } ?? newSigningContext()
        defer { signingContexts.withLock { $0.append(context) } }
        let signing = context.pointer
        var der = [UInt8](repeating: 0, count: 2 * coordinateSize + 16)
        var length = der.count
        OpenSSL.check(EVP_PKEY_sign(signing, &der, &length, digest, digest.count) == 1, "EVP_PKEY_sign")
        return der.withUnsafeBufferPointer { buffer -> [UInt8] in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, length) else { fatalError("TestPKI: bad ECDSA signature") }
            defer { ECDSA_SIG_free(signature) }
            let size = coordinateSize
            var raw = [UInt8](repeating: 0, count: size * 2)
            raw.withUnsafeMutableBufferPointer { out in
                OpenSSL.check(BN_bn2binpad(ECDSA_SIG_get0_r(signature), out.baseAddress, Int32(size)) == size, "r")
                OpenSSL.check(BN_bn2binpad(ECDSA_SIG_get0_s(signature), out.baseAddress! + size, Int32(size)) == size, "s")
            }
            return raw
        }
    }

    private func newSigningContext() -> SigningContext {
        guard let context = EVP_PKEY_CTX_new(leafKey, nil) else { fatalError("TestPKI: EVP_PKEY_CTX_new failed") }
        OpenSSL.check(EVP_PKEY_sign_init(context) == 1, "EVP_PKEY_sign_init")
        OpenSSL.check(EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1, "EVP_PKEY_CTX_set_signature_md")
        return SigningContext(pointer: context)
    }

    deinit {
        for context in signingContexts.withLock({ $0 }) { EVP_PKEY_CTX_free(context.pointer) }
        X509_free(leaf)
        X509_free(intermediate)
        X509_free(root)
        EVP_PKEY_free(leafKey)
        EVP_PKEY_free(intermediateKey)
        EVP_PKEY_free(rootKey)
    }
}

enum OpenSSL {
    static func check(_ condition: Bool, _ what: String) {
        if !condition {
            // COpenSSL's one reader of the error queue (the whole queue, joined).
            var buffer = [CChar](repeating: 0, count: 4096)
            _ = copenssl_error_drain(&buffer, buffer.count)
            let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            fatalError("TestPKI: OpenSSL \(what) failed: \(reason)")
        }
    }

    static func generateKey(_ curve: TestPKI.Curve) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { fatalError("TestPKI: no EC support") }
        defer { EVP_PKEY_CTX_free(context) }
        check(EVP_PKEY_keygen_init(context) == 1, "EVP_PKEY_keygen_init")
        check(EVP_PKEY_CTX_set_group_name(context, curve.rawValue) == 1, "EVP_PKEY_CTX_set_group_name")
        var key: OpaquePointer? = nil
        check(EVP_PKEY_generate(context, &key) == 1 && key != nil, "EVP_PKEY_generate")
        return key!
    }

    static func der(_ certificate: OpaquePointer) -> [UInt8] {
        let length = i2d_X509(certificate, nil)
        check(length > 0, "i2d_X509")
        return [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, initialized in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            initialized = Int(i2d_X509(certificate, &cursor))
        }
    }

    /// Runs `body` with a memory BIO and returns what it wrote.
    static func writeToMemory(_ body: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("TestPKI: BIO_new failed") }
        defer { BIO_free(bio) }
        check(body(bio) == 1, "PEM write")
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = copenssl_bio_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Runs `body` with a read-only memory BIO over `text`.
    static func readFromMemory<T>(_ text: String, _ body: (OpaquePointer) -> T?) -> T? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw -> T? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            let result = body(bio)
            if result == nil { ERR_clear_error() }
            return result
        }
    }
}
