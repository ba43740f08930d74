internal import COpenSSL

/// An owned OpenSSL `EVP_PKEY` holding a P-256 public key, and ES256 verification with it.
///
/// An `EVP_PKEY` may be used by several threads at once for verification; each call makes
/// its own short-lived `EVP_PKEY_CTX`.
final class P256PublicKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of one reference to `key`.
    init(owning key: OpaquePointer) {
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }

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
    /// section 3.4) over the SHA-256 of `signingInput` (`header.payload`, ASCII).
    func verifyES256(signingInput: UnsafeBufferPointer<UInt8>, signature: UnsafeBufferPointer<UInt8>) -> Bool {
        guard signature.count == 64 else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32 + 80) { scratch -> Bool in
            let digest = scratch.baseAddress!
            SHA256.digest(signingInput, into: digest)
            let der = digest + 32
            let derLength = Self.encodeECDSASignature(signature, into: der)
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
                ERR_clear_error()
                return false
            }
            defer { EVP_PKEY_CTX_free(context) }
            guard EVP_PKEY_verify_init(context) == 1 else {
                ERR_clear_error()
                return false
            }
            let result = EVP_PKEY_verify(context, der, derLength, digest, 32)
            if result != 1 { ERR_clear_error() }
            return result == 1
        }
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
