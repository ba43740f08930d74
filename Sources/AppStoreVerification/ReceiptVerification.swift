internal import COpenSSL
public import EntitlementCore
import Synchronization

/// Verifies legacy PKCS#7 app receipts (specification section 16) with OpenSSL and
/// decodes their payload.
///
/// A receipt goes through, in order:
/// 1. standard base64 (whitespace ignored) of at most ``maxReceiptBytes`` bytes, a DER
///    (or BER) PKCS#7 structure that spans all of them, of type SignedData with the
///    receipt embedded (else `MALFORMED_INPUT`);
/// 2. the payload, Apple's ASN.1 receipt format (else `MALFORMED_INPUT`);
/// 3. exactly one signer, whose certificate the receipt carries, and its signature
///    (SHA-1 or SHA-256 with RSA, as Apple signed them over the years) over the payload
///    (else `VERIFICATION_FAILURE`);
/// 4. the signer's chain through the intermediates the receipt carries to a configured
///    root (default: the embedded Apple Inc. Root), with validity checked at the
///    receipt's creation date (every receipt-signing leaf has expired by now); the
///    leaf carries OID 1.2.840.113635.100.6.11.1 (else `INVALID_CHAIN`);
/// 5. the bundle id (else `INVALID_APP_IDENTIFIER`) and the environment (else
///    `INVALID_ENVIRONMENT`).
///
/// With environment ``AppStoreEnvironment/xcode`` or ``AppStoreEnvironment/localTesting``
/// configured, steps 3 and 4 are skipped: StoreKit testing in Xcode signs receipts
/// with a certificate of its own. The verifier is `Sendable`.
public struct ReceiptVerifier: Sendable {
    /// The largest receipt accepted, in bytes once decoded from base64.
    public static let maxReceiptBytes = 4 * 1024 * 1024

    public let bundleId: String
    public let environments: [AppStoreEnvironment]
    let trust: ReceiptTrust?

    /// Whether this verifier checks signatures and chains (all but Xcode and LocalTesting).
    public var checksSignatures: Bool { trust != nil }

    /// A verifier for `bundleId`'s receipts from `environments`, trusting `trustedRootsDER`
    /// (default: the embedded Apple Inc. Root).
    /// - Throws: `INVALID_CERTIFICATE` when a root does not parse, or none is given
    ///   outside Xcode and LocalTesting.
    public init(
        bundleId: String, environments: [AppStoreEnvironment],
        trustedRootsDER: [[UInt8]] = [AppleRootCertificate.incRootDER]
    ) throws(VerificationError) {
        self.bundleId = bundleId
        self.environments = environments
        if environments.allSatisfy(\.isLocal) {
            trust = nil
        } else {
            guard !trustedRootsDER.isEmpty else { throw .invalidCertificate("no trusted receipt root certificate is configured") }
            trust = try ReceiptTrust(rootsDER: trustedRootsDER)
        }
    }

    /// Verifies a receipt given as base64 (the `receipt-data` apps sent to `verifyReceipt`).
    public func verify(base64 text: String) throws(VerificationError) -> SignedReceipt {
        var compact: [UInt8] = []
        compact.reserveCapacity(text.utf8.count)
        for byte in text.utf8 where !(byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09) { compact.append(byte) }
        guard compact.count <= (Self.maxReceiptBytes / 3 + 1) * 4 else {
            throw .malformed("receipt of \(compact.count) base64 characters exceeds the limit of \(Self.maxReceiptBytes) bytes")
        }
        guard !compact.isEmpty, let der = compact.withUnsafeBufferPointer(Base64.decodeStandardPadded) else {
            throw .malformed(
                "not a receipt: a receipt is standard base64 (A-Z a-z 0-9 + /, padded with = to a multiple of 4 characters), and this is not; a bare line of those characters is read as a receipt, a JWS has two dots")
        }
        return try verify(der: der)
    }

    /// Verifies a receipt's DER bytes.
    public func verify(der: [UInt8]) throws(VerificationError) -> SignedReceipt {
        guard der.count <= Self.maxReceiptBytes else {
            throw .malformed("receipt of \(der.count) bytes exceeds the limit of \(Self.maxReceiptBytes) bytes")
        }
        let pkcs7 = try PKCS7Container(der: der)
        let payload: ReceiptPayload
        do { payload = try ReceiptPayloadReader.read(pkcs7.content) } catch { throw .malformed(error.message) }
        if let trust { try trust.verify(pkcs7, creationDate: payload.creationDate) }
        guard payload.bundleId == bundleId else {
            throw VerificationError(
                .invalidAppIdentifier, "receipt bundle id \(payload.bundleId) does not match the configured bundleId \(bundleId)")
        }
        guard let environment = payload.environment, environments.contains(environment) else {
            throw VerificationError(
                .invalidEnvironment,
                "receipt environment \(payload.environmentName ?? "Production") does not match the configured environment \(environments.map(\.rawValue).joined(separator: ", "))")
        }
        return SignedReceipt(base64: Base64.encodeStandardPadded(der), sha256: SHA256.hex(der), payload: payload)
    }
}

/// An owned OpenSSL `PKCS7` SignedData with its embedded content.
final class PKCS7Container {
    let pointer: UnsafeMutablePointer<PKCS7>
    /// The signed content: the receipt payload.
    let content: [UInt8]

    init(der: [UInt8]) throws(VerificationError) {
        let parsed: (UnsafeMutablePointer<PKCS7>?, Bool) = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return (nil, false) }
            var cursor: UnsafePointer<UInt8>? = base
            let value = d2i_PKCS7(nil, &cursor, buffer.count)
            return (value, cursor == base + buffer.count)
        }
        guard let pkcs7 = parsed.0 else {
            ERR_clear_error()
            throw .malformed("receipt is not a PKCS#7 structure (DER)")
        }
        guard parsed.1 else {
            PKCS7_free(pkcs7)
            throw .malformed("receipt has bytes after its PKCS#7 structure")
        }
        guard copenssl_pkcs7_is_signed(pkcs7) == 1 else {
            PKCS7_free(pkcs7)
            throw .malformed("receipt is a PKCS#7 structure but not SignedData")
        }
        var length: Int32 = 0
        guard let bytes = copenssl_pkcs7_signed_content(pkcs7, &length), length >= 0 else {
            PKCS7_free(pkcs7)
            throw .malformed("receipt's SignedData embeds no content")
        }
        content = Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
        pointer = pkcs7
    }

    deinit { PKCS7_free(pointer) }
}

/// The configured receipt roots in an OpenSSL `X509_STORE`, and the signature and chain
/// checks of a receipt against them.
final class ReceiptTrust: @unchecked Sendable {
    private let store: OpaquePointer
    private let roots: [X509Certificate]
    /// Chains verified before, by the SHA-256 of the certificates a receipt carries: the
    /// window in which every certificate of the verified chain is valid. A receipt whose
    /// creation date falls inside it needs no new path validation (the same answer
    /// OpenSSL gave, as validity is the only check that depends on the date).
    private let verified = Mutex<[String: ClosedRange<Int64>]>([:])
    static let cacheCapacity = 64

    init(rootsDER: [[UInt8]]) throws(VerificationError) {
        var parsed: [X509Certificate] = []
        for (index, der) in rootsDER.enumerated() {
            guard let root = X509Certificate.parse(der) else {
                throw .invalidCertificate("trusted receipt root \(index) is not a DER X.509 certificate")
            }
            parsed.append(root)
        }
        guard let store = X509_STORE_new() else { fatalError("X509_STORE_new failed") }
        for root in parsed where X509_STORE_add_cert(store, root.pointer) != 1 { ERR_clear_error() }
        self.store = store
        self.roots = parsed
    }

    deinit { X509_STORE_free(store) }

    func verify(_ pkcs7: PKCS7Container, creationDate: Int64) throws(VerificationError) {
        let signerCount = copenssl_pkcs7_signer_count(pkcs7.pointer)
        guard signerCount == 1 else { throw .verificationFailure("receipt has \(signerCount) signers, expected 1") }
        guard let signers = PKCS7_get0_signers(pkcs7.pointer, nil, 0) else {
            ERR_clear_error()
            throw .verificationFailure("receipt does not carry its signer's certificate")
        }
        defer { copenssl_x509_stack_free(signers) }
        guard copenssl_x509_stack_num(signers) == 1, let signerPointer = copenssl_x509_stack_value(signers, 0) else {
            throw .verificationFailure("receipt does not carry its signer's certificate")
        }
        let signer = X509Certificate(borrowing: signerPointer)
        // The signature over the content, by the signer's key (the chain is checked below, at the creation date).
        let carried = copenssl_pkcs7_certificates(pkcs7.pointer)
        guard PKCS7_verify(pkcs7.pointer, nil, store, nil, nil, Int32(PKCS7_NOVERIFY)) == 1 else {
            var detail = [CChar](repeating: 0, count: 512)
            _ = copenssl_error_drain(&detail, detail.count)
            throw .verificationFailure(
                "receipt signature does not verify: \(String(decoding: detail.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        let chainKey = Self.key(signer: signer, carried: carried)
        if let window = verified.withLock({ $0[chainKey] }), window.contains(creationDate) { return }
        guard let context = X509_STORE_CTX_new() else { fatalError("X509_STORE_CTX_new failed") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, signer.pointer, carried) == 1 else {
            ERR_clear_error()
            throw .invalidChain("could not set up certificate chain verification")
        }
        let seconds = creationDate >= 0 ? creationDate / 1_000 : (creationDate - 999) / 1_000
        X509_STORE_CTX_set_time(context, 0, time_t(seconds))
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let depth = X509_STORE_CTX_get_error_depth(context)
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            var culprit = ""
            if let current = X509_STORE_CTX_get_current_cert(context) {
                culprit = " (certificate at depth \(depth): \(X509Certificate(borrowing: current).subject))"
            }
            ERR_clear_error()
            throw .invalidChain(
                "receipt certificate chain is not valid at its creation date \(UTCTime.iso8601(creationDate)): \(reason)\(culprit)")
        }
        guard signer.hasExtension(ObjectIdentifier.appleReceiptSigner) else {
            throw .invalidChain(
                "receipt signer \(signer.subject) lacks Apple's receipt-signing extension \(ObjectIdentifier.appleReceiptSigner.dotted)")
        }
        // Remember the window in which the whole verified chain is valid.
        if let chain = X509_STORE_CTX_get0_chain(context) {
            var from = Int64.min
            var to = Int64.max
            for index in 0..<max(copenssl_x509_stack_num(chain), 0) {
                guard let pointer = copenssl_x509_stack_value(chain, index) else { return }
                let certificate = X509Certificate(borrowing: pointer)
                guard let notBefore = certificate.notBeforeMillis, let notAfter = certificate.notAfterMillis else { return }
                from = max(from, notBefore)
                to = min(to, notAfter)
            }
            guard from <= to else { return }
            verified.withLock { cache in
                if cache.count >= Self.cacheCapacity { cache.removeAll() }
                cache[chainKey] = from...to
            }
        }
    }

    /// The cache key of a receipt's chain: the signer's DER, then every certificate it carries.
    private static func key(signer: X509Certificate, carried: OpaquePointer?) -> String {
        var bytes = signer.der
        if let carried {
            for index in 0..<max(copenssl_x509_stack_num(carried), 0) {
                if let pointer = copenssl_x509_stack_value(carried, index) { bytes += X509Certificate(borrowing: pointer).der }
            }
        }
        return SHA256.hex(bytes)
    }
}
