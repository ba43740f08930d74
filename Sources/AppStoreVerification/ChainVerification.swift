extension TrustStore {
    /// Verifies the chain a JWS header presented, at the payload's signing time, and checks
    /// Apple's certificate extensions.
    ///
    /// - Throws: `INVALID_CHAIN` when the chain does not verify to a configured root at
    ///   `millis`, when `x5c[2]` is not that root byte for byte, or when the leaf lacks OID
    ///   1.2.840.113635.100.6.11.1 or the intermediate 1.2.840.113635.100.6.2.1 (the statuses
    ///   Apple's Java library gives, whose path validation includes these checks);
    ///   `VERIFICATION_FAILURE` when the leaf key is not P-256.
    /// - Parameter keyTableAfter: when the leaf key's table of multiples is built
    ///   (``VerifierConfiguration/keyTableAfter``).
    func verify(
        _ presented: PresentedChain, atMillis millis: Int64, dateField: String, keyTableAfter: Int? = nil
    ) throws(VerificationError) -> VerifiedChain {
        let chain: [X509Certificate]
        do {
            chain = try verify(leaf: presented.leaf, intermediate: presented.intermediate, atMillis: millis, dateField: dateField)
        } catch {
            // OpenSSL names only the certificate it could not place; say why, when the
            // root the JWS presents is none of those trusted.
            guard !rootsDER.contains(presented.rootDER) else { throw error }
            let root = X509Certificate.parse(presented.rootDER).map { " (\($0.subject))" } ?? ""
            throw .invalidChain("\(error.message); x5c[2]\(root) is none of the configured trusted roots")
        }
        guard chain.count == 3 else {
            throw .invalidChain(
                "the chain verified through \(chain.count) certificates; App Store chains are exactly leaf, intermediate, root")
        }
        guard chain[1].der == presented.intermediateDER else {
            throw .invalidChain("the verified chain does not pass through the x5c intermediate certificate")
        }
        guard chain[2].der == presented.rootDER else {
            throw .invalidChain(
                "x5c[2] is not the configured trusted root the chain leads to (\(chain[2].subject)); the root in x5c must be that root byte for byte")
        }
        guard presented.leaf.hasExtension(.appleReceiptSigner) else {
            throw .invalidChain("leaf certificate lacks Apple OID \(ObjectIdentifier.appleReceiptSigner.dotted)")
        }
        guard presented.intermediate.hasExtension(.appleWWDRIntermediate) else {
            throw .invalidChain("intermediate certificate lacks Apple OID \(ObjectIdentifier.appleWWDRIntermediate.dotted)")
        }
        guard let key = presented.leaf.p256PublicKey(keyTableAfter: keyTableAfter) else {
            throw .verificationFailure("the leaf certificate's key is not an EC P-256 key, which ES256 requires")
        }
        var notBefore = Int64.min
        var notAfter = Int64.max
        for certificate in chain {
            guard let start = certificate.notBeforeMillis, let end = certificate.notAfterMillis else {
                throw .invalidChain("a certificate in the chain has an unreadable validity period")
            }
            notBefore = max(notBefore, start)
            notAfter = min(notAfter, end)
        }
        return VerifiedChain(key: key, notBefore: notBefore, notAfter: notAfter)
    }
}
