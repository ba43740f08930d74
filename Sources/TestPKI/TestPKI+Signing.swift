internal import COpenSSL
public import JSONAndBase64

extension TestPKI {
    /// Signs `payload` as the App Store does: a compact JWS with header
    /// `{"alg":"ES256","x5c":[leaf, intermediate, root]}`, the payload as compact JSON, and an
    /// ES256 signature (raw 64-byte `r || s`) by the leaf key.
    public func sign(_ payload: JSONValue) -> String {
        JSONWriter.bytes(payload).withUnsafeBytes { sign(headerSegment: headerSegment, payload: $0) }
    }

    /// Signs any payload text under any header, for malformed variants (other `alg`, a
    /// different number of certificates, another root in `x5c`, a payload that is not JSON...).
    public func sign(payloadJSON: String, header: JSONValue) -> String {
        var payload = payloadJSON
        return payload.withUTF8 { sign(headerSegment: Base64Encoding.url(JSONWriter.bytes(header)), payload: UnsafeRawBufferPointer($0)) }
    }

    /// `headerSegment.payloadSegment.signature`, the payload encoded here, the whole signing
    /// input written once into one string.
    private func sign(headerSegment: String, payload: UnsafeRawBufferPointer) -> String {
        let signatureLength = Base64.encodedLengthURL(2 * material.coordinateSize)
        var jws = headerSegment
        jws.reserveCapacity(headerSegment.utf8.count + 2 + Base64.encodedLengthURL(payload.count) + signatureLength)
        jws += "."
        jws += Base64.encodeURL(payload)
        let signature = jws.withUTF8 { self.signature(over: UnsafeRawBufferPointer($0)) }
        jws += "."
        jws += Base64Encoding.url(signature)
        return jws
    }

    /// The raw `r || s` ES256 signature by the leaf key over `bytes` (SHA-256).
    public func signature(over bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { signature(over: $0) }
    }

    func signature(over bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var state = SHA256_CTX()
        var digest = [UInt8](repeating: 0, count: 32)
        OpenSSL.check(copenssl_sha256_init(&state) == 1, "SHA256_Init")
        OpenSSL.check(copenssl_sha256_update(&state, bytes.baseAddress, bytes.count) == 1, "SHA256_Update")
        OpenSSL.check(copenssl_sha256_final(&digest, &state) == 1, "SHA256_Final")
        return material.signDigest(digest)
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
