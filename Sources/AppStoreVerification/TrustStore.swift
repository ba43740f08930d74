internal import COpenSSL

/// The configured trusted roots in an OpenSSL `X509_STORE`, and chain verification against
/// them with OpenSSL's own path validation (`X509_verify_cert`, RFC 5280, strict mode).
///
/// Only the configured roots are trust anchors. The intermediate from `x5c` is offered as
/// untrusted; the root in `x5c` is never trusted by itself: it must be byte-for-byte the
/// configured root the chain leads to.
final class TrustStore: @unchecked Sendable {
    private let store: OpaquePointer
    let roots: [X509Certificate]
    /// The configured roots' DER, as configured.
    let rootsDER: [[UInt8]]

    init(rootsDER: [[UInt8]]) throws(VerificationError) {
        var parsed: [X509Certificate] = []
        for (index, der) in rootsDER.enumerated() {
            guard let root = X509Certificate.parse(der) else {
                throw .invalidCertificate("trusted root \(index) is not a DER X.509 certificate")
            }
            parsed.append(root)
        }
        guard let store = X509_STORE_new() else { fatalError("X509_STORE_new failed") }
        for root in parsed where X509_STORE_add_cert(store, root.pointer) != 1 {
            ERR_clear_error()  // a duplicate root is harmless
        }
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_X509_STRICT))
        self.store = store
        self.roots = parsed
        self.rootsDER = rootsDER
    }

    deinit { X509_STORE_free(store) }

    /// Verifies `leaf` <- `intermediate` <- a configured root, with validity checked at
    /// `millis` (whole seconds, as OpenSSL compares).
    ///
    /// - Returns: the verified chain, leaf first, trust anchor last.
    func verify(leaf: X509Certificate, intermediate: X509Certificate, atMillis millis: Int64, dateField: String)
        throws(VerificationError) -> [X509Certificate]
    {
        guard let context = X509_STORE_CTX_new() else { fatalError("X509_STORE_CTX_new failed") }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = copenssl_x509_stack_new() else { fatalError("sk_X509_new_null failed") }
        defer { copenssl_x509_stack_free(untrusted) }  // the stack only, not the borrowed certificate
        _ = copenssl_x509_stack_push(untrusted, intermediate.pointer)

        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            ERR_clear_error()
            throw .invalidChain("could not set up certificate chain verification")
        }
        X509_STORE_CTX_set_time(context, 0, time_t(millis >= 0 ? millis / 1_000 : (millis - 999) / 1_000))
        let result = X509_verify_cert(context)
        guard result == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let depth = X509_STORE_CTX_get_error_depth(context)
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            var culprit = ""
            if let current = X509_STORE_CTX_get_current_cert(context) {
                let certificate = X509Certificate(borrowing: current)
                culprit = " (\(Self.role(depth)) \(certificate.subject))"
            }
            ERR_clear_error()
            throw .invalidChain(
                "certificate chain is not valid at \(dateField) \(UTCTime.iso8601(millis)): \(reason)\(culprit)")
        }
        guard let chain = X509_STORE_CTX_get0_chain(context) else {
            throw .invalidChain("certificate chain verification returned no chain")
        }
        let count = copenssl_x509_stack_num(chain)
        var certificates: [X509Certificate] = []
        for index in 0..<max(count, 0) {
            if let certificate = copenssl_x509_stack_value(chain, index) {
                certificates.append(X509Certificate(borrowing: certificate))
            }
        }
        return certificates
    }

    private static func role(_ depth: Int32) -> String {
        switch depth {
        case 0: return "leaf"
        case 1: return "intermediate"
        case 2: return "root"
        default: return "certificate at depth \(depth)"
        }
    }
}
