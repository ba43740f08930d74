internal import COpenSSL
internal import EntitlementCore

/// Reads one X.509 certificate from DER bytes or PEM text (`-----BEGIN CERTIFICATE-----`),
/// for example a file named in the configuration's `rootCertificates`.
///
/// - Parameter bytes: the file's contents.
/// - Returns: the certificate's DER encoding, checked to parse as X.509.
/// - Throws: ``VerificationError`` with code `INVALID_CERTIFICATE` when the bytes hold neither,
///   or a PEM file holds more than one certificate.
public func loadCertificate(from bytes: some Collection<UInt8>) throws(VerificationError) -> [UInt8] {
    let data = Array(bytes)
    let begin = Array("-----BEGIN CERTIFICATE-----".utf8)
    let end = Array("-----END CERTIFICATE-----".utf8)
    let der: [UInt8]
    if let start = firstRange(of: begin, in: data, from: 0) {
        guard let stop = firstRange(of: end, in: data, from: start.upperBound) else {
            throw .invalidCertificate("PEM certificate has no -----END CERTIFICATE----- line")
        }
        guard let decoded = Base64.decodePEMBody(data[start.upperBound..<stop.lowerBound]), !decoded.isEmpty else {
            throw .invalidCertificate("PEM certificate body is not base64")
        }
        // One file, one certificate: the others of a bundle would be dropped without a word.
        guard firstRange(of: begin, in: data, from: stop.upperBound) == nil else {
            throw .invalidCertificate("the file holds more than one certificate: list each root as a file of its own")
        }
        der = decoded
    } else {
        der = data
    }
    guard !der.isEmpty else { throw .invalidCertificate("the certificate file is empty") }
    guard X509Certificate.parse(der) != nil else {
        throw .invalidCertificate("not a DER or PEM X.509 certificate (\(data.count) bytes)")
    }
    return der
}

private func firstRange(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Range<Int>? {
    guard needle.count <= haystack.count else { return nil }
    var index = start
    while index + needle.count <= haystack.count {
        if haystack[index] == needle[0] && haystack[index..<index + needle.count].elementsEqual(needle) {
            return index..<index + needle.count
        }
        index += 1
    }
    return nil
}

/// Why the DER certificate `der` can never be the trust anchor of a chain, or `nil`: a
/// root is self-issued (its subject its issuer, its key the one it is signed with), so a
/// leaf or an intermediate configured as a trusted root would leave every chain unverified.
public func trustAnchorProblem(_ der: [UInt8]) -> String? {
    guard let certificate = X509Certificate.parse(der) else { return "not a DER X.509 certificate" }
    guard X509_check_issued(certificate.pointer, certificate.pointer) == X509_V_OK else {
        ERR_clear_error()
        return "\(certificate.subject) is not a root certificate (it is issued by another): trust the root its chain ends in"
    }
    return nil
}

