internal import EntitlementCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The three segments of a compact JWS (RFC 7515 section 7.1), as byte ranges of the input.
struct CompactJWS {
    /// Larger inputs are refused before any work: App Store JWS are a few kilobytes.
    static let maximumLength = 1 << 20

    let header: UnsafeBufferPointer<UInt8>
    let payload: UnsafeBufferPointer<UInt8>
    let signature: UnsafeBufferPointer<UInt8>
    /// `header.payload`: the bytes the signature covers.
    let signingInput: UnsafeBufferPointer<UInt8>

    /// Splits `bytes` into its segments.
    /// - Throws: `MALFORMED_INPUT` unless `bytes` is three `.`-separated segments, the first two non-empty.
    init(_ bytes: UnsafeBufferPointer<UInt8>) throws(VerificationError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { throw .malformed("the JWS is empty") }
        guard bytes.count <= Self.maximumLength else {
            throw .malformed("the JWS is \(bytes.count) bytes; at most \(Self.maximumLength) are accepted")
        }
        let count = bytes.count
        func dot(after start: Int) -> Int? {
            guard start < count, let found = memchr(base + start, Int32(UInt8(ascii: ".")), count - start) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        guard let first = dot(after: 0), let second = dot(after: first + 1) else {
            throw .malformed("not a compact JWS: expected 3 base64url segments separated by '.', found \(Self.segmentCount(bytes))")
        }
        if dot(after: second + 1) != nil {
            throw .malformed("not a compact JWS: expected 3 base64url segments separated by '.', found \(Self.segmentCount(bytes))")
        }
        guard first > 0 else { throw .malformed("not a compact JWS: the header segment is empty") }
        guard second > first + 1 else { throw .malformed("not a compact JWS: the payload segment is empty") }
        header = UnsafeBufferPointer(start: base, count: first)
        payload = UnsafeBufferPointer(start: base + first + 1, count: second - first - 1)
        signature = UnsafeBufferPointer(start: base + second + 1, count: count - second - 1)
        signingInput = UnsafeBufferPointer(start: base, count: second)
    }

    private static func segmentCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        bytes.reduce(1) { $0 + ($1 == UInt8(ascii: ".") ? 1 : 0) }
    }

    /// The decoded header as a JSON object.
    /// - Throws: `MALFORMED_INPUT` when the header is not base64url-encoded JSON object.
    func decodedHeader() throws(VerificationError) -> JSONObject {
        guard let bytes = Base64.decodeURL(header) else {
            throw .malformed("the JWS header is not base64url (unpadded, no whitespace)")
        }
        let value: JSONValue
        do {
            value = try JSONParser(maximumDepth: 8).parse(bytes)
        } catch {
            throw .malformed("the JWS header is not JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw .malformed("the JWS header is a JSON \(value.typeName), not an object")
        }
        return object
    }

    /// The decoded raw `r || s` signature when it is 64 bytes of base64url, else `nil`.
    func decodedSignature() -> [UInt8]? {
        guard let bytes = Base64.decodeURL(signature), bytes.count == 64 else { return nil }
        return bytes
    }
}

/// The certificates an App Store JWS header carries in `x5c`, parsed but not yet trusted.
struct PresentedChain {
    let leaf: X509Certificate
    let intermediate: X509Certificate
    let intermediateDER: [UInt8]
    let rootDER: [UInt8]

    /// Reads `alg` and `x5c` from an App Store JWS header.
    ///
    /// - Throws: `VERIFICATION_FAILURE` when `alg` is not `ES256`, `x5c` is absent or `crit` is
    ///   present; `INVALID_CHAIN_LENGTH` when `x5c` does not hold exactly 3 entries;
    ///   `INVALID_CERTIFICATE` when an entry is not standard base64 of a DER X.509 certificate.
    /// - Parameter knownRoots: DER of certificates known to parse (the configured roots): an
    ///   `x5c` entry equal to one of them is not parsed again.
    init(header: JSONObject, knownRoots: [[UInt8]] = []) throws(VerificationError) {
        switch header["alg"] {
        case .string("ES256"): break
        case .string(let alg):
            throw .verificationFailure("the JWS alg is \"\(alg)\"; App Store data is signed with ES256")
        case nil, .null:
            throw .verificationFailure("the JWS header has no alg; App Store data is signed with ES256")
        case let other?:
            throw .verificationFailure("the JWS alg is a JSON \(other.typeName); App Store data is signed with ES256")
        }
        if header["crit"] != nil {
            throw .verificationFailure("the JWS header lists critical extensions (crit), which App Store data never uses")
        }
        guard case .array(let entries)? = header["x5c"] else {
            throw .verificationFailure("the JWS header has no x5c certificate chain (an array of base64 DER certificates)")
        }
        guard entries.count == 3 else {
            throw VerificationError(
                .invalidChainLength,
                "x5c holds \(entries.count) certificate\(entries.count == 1 ? "" : "s"); Apple's chain has exactly 3 (leaf, intermediate, root)")
        }
        var certificates: [(X509Certificate?, [UInt8])] = []
        for (index, entry) in entries.enumerated() {
            let name = ["leaf", "intermediate", "root"][index]
            guard case .string(let text) = entry else {
                throw .invalidCertificate("x5c[\(index)] (\(name)) is a JSON \(entry.typeName), not a base64 string")
            }
            guard let der = Base64.decodeStandardPadded(text) else {
                throw .invalidCertificate("x5c[\(index)] (\(name)) is not standard base64 with padding")
            }
            if index == 2 && knownRoots.contains(der) {
                certificates.append((nil, der))  // the root is only ever compared, byte for byte
                continue
            }
            guard let certificate = X509Certificate.parse(der) else {
                throw .invalidCertificate("x5c[\(index)] (\(name)) is not a DER X.509 certificate")
            }
            certificates.append((certificate, der))
        }
        leaf = certificates[0].0!
        intermediate = certificates[1].0!
        intermediateDER = certificates[1].1
        rootDER = certificates[2].1
    }
}
