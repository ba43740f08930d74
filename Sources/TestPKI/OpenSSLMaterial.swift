internal import COpenSSL
import JSONAndBase64

/// Owned OpenSSL keys and certificates of one test PKI, freed on deinit.
final class Material: @unchecked Sendable {
    let rootKey: OpaquePointer
    let intermediateKey: OpaquePointer
    let leafKey: OpaquePointer
    let root: OpaquePointer
    let intermediate: OpaquePointer
    let leaf: OpaquePointer

    /// Takes ownership of one reference to each.
    init(rootKey: OpaquePointer, intermediateKey: OpaquePointer, leafKey: OpaquePointer,
         root: OpaquePointer, intermediate: OpaquePointer, leaf: OpaquePointer) {
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
    }

    deinit {
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
