internal import COpenSSL
public import JSONAndBase64

extension TestPKI {
    /// Signs `payload` as the App Store does: a compact JWS with header
    /// `{"alg":"ES256","x5c":[leaf, intermediate, root]}`, the payload as compact JSON, and an
    /// ES256 signature (raw 64-byte `r || s`) by the leaf key.
    public func sign(_ payload: JSONValue) -> String {
        sign(payloadJSON: JSONWriter.string(payload), header: header())
    }

    /// Signs any payload text under any header, for malformed variants (other `alg`, a
    /// different number of certificates, another root in `x5c`, a payload that is not JSON...).
    public func sign(payloadJSON: String, header: JSONValue) -> String {
        let signingInput = Base64Encoding.url(Array(JSONWriter.string(header).utf8)) + "."
            + Base64Encoding.url(Array(payloadJSON.utf8))
        return signingInput + "." + Base64Encoding.url(signature(over: Array(signingInput.utf8)))
    }

    /// The raw `r || s` ES256 signature by the leaf key over `bytes` (SHA-256).
    public func signature(over bytes: [UInt8]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("TestPKI: EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        OpenSSL.check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, material.leafKey) == 1, "EVP_DigestSignInit")
        var length = 0
        OpenSSL.check(EVP_DigestSign(context, nil, &length, bytes, bytes.count) == 1, "EVP_DigestSign")
        var der = [UInt8](repeating: 0, count: length)
        OpenSSL.check(EVP_DigestSign(context, &der, &length, bytes, bytes.count) == 1, "EVP_DigestSign")
        let coordinateSize = (Int(EVP_PKEY_get_bits(material.leafKey)) + 7) / 8
        return der.withUnsafeBufferPointer { buffer -> [UInt8] in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, length) else { fatalError("TestPKI: bad ECDSA signature") }
            defer { ECDSA_SIG_free(signature) }
            var raw = [UInt8](repeating: 0, count: coordinateSize * 2)
            raw.withUnsafeMutableBufferPointer { out in
                OpenSSL.check(BN_bn2binpad(ECDSA_SIG_get0_r(signature), out.baseAddress, Int32(coordinateSize)) == coordinateSize, "r")
                OpenSSL.check(
                    BN_bn2binpad(ECDSA_SIG_get0_s(signature), out.baseAddress! + coordinateSize, Int32(coordinateSize)) == coordinateSize, "s")
            }
            return raw
        }
    }
}

/// Base64 for JWS (base64url, no padding) and `x5c` (standard, padded): the names the
/// tests use, over ``Base64``'s one encoder.
public enum Base64Encoding {
    /// Standard base64 with `=` padding (RFC 4648 section 4).
    public static func standard(_ bytes: [UInt8]) -> String { Base64.encodeStandardPadded(bytes) }
    /// base64url without padding (RFC 7515 section 2).
    public static func url(_ bytes: [UInt8]) -> String { Base64.encodeURL(bytes) }
    /// base64url without padding of the UTF-8 of `text`.
    public static func url(_ text: String) -> String { url(Array(text.utf8)) }
}
