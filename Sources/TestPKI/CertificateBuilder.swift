internal import COpenSSL

/// Issues X.509 v3 certificates through OpenSSL's C API, with the extensions OpenSSL's
/// strict verification (`X509_V_FLAG_X509_STRICT`) expects and Apple's certificates carry.
struct CertificateBuilder {
    enum Role {
        case root
        case intermediate
        case leaf
    }

    var role: Role
    var commonName: String
    var validity: Validity
    var subjectKey: OpaquePointer
    /// The issuer's certificate and key; `nil` for a self-signed root.
    var issuer: (certificate: OpaquePointer, key: OpaquePointer)?
    /// Extra extensions with an ASN.1 NULL value, by dotted OID (Apple's marker extensions).
    var markerOIDs: [String]
    var serial: UInt64

    func build() -> OpaquePointer {
        guard let certificate = X509_new() else { fatalError("TestPKI: X509_new failed") }
        OpenSSL.check(X509_set_version(certificate, 2) == 1, "X509_set_version")
        OpenSSL.check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial) == 1, "serial")
        OpenSSL.check(ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(validity.notBefore / 1_000)) != nil, "notBefore")
        OpenSSL.check(ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(validity.notAfter / 1_000)) != nil, "notAfter")

        guard let name = X509_NAME_new() else { fatalError("TestPKI: X509_NAME_new failed") }
        defer { X509_NAME_free(name) }
        for (field, value) in [("CN", commonName), ("OU", "Test PKI"), ("O", "Example Test Authority"), ("C", "US")] {
            OpenSSL.check(X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1, "X509_NAME_add_entry")
        }
        OpenSSL.check(X509_set_subject_name(certificate, name) == 1, "X509_set_subject_name")
        if let issuer {
            OpenSSL.check(X509_set_issuer_name(certificate, X509_get_subject_name(issuer.certificate)) == 1, "X509_set_issuer_name")
        } else {
            OpenSSL.check(X509_set_issuer_name(certificate, name) == 1, "X509_set_issuer_name")
        }
        OpenSSL.check(X509_set_pubkey(certificate, subjectKey) == 1, "X509_set_pubkey")

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate ?? certificate, certificate, nil, nil, 0)
        switch role {
        case .root:
            add("critical,CA:TRUE", NID_basic_constraints, &context, certificate)
            add("critical,keyCertSign,cRLSign", NID_key_usage, &context, certificate)
            add("hash", NID_subject_key_identifier, &context, certificate)
        case .intermediate:
            add("critical,CA:TRUE,pathlen:0", NID_basic_constraints, &context, certificate)
            add("critical,keyCertSign,cRLSign", NID_key_usage, &context, certificate)
            add("hash", NID_subject_key_identifier, &context, certificate)
            add("keyid:always", NID_authority_key_identifier, &context, certificate)
        case .leaf:
            add("critical,CA:FALSE", NID_basic_constraints, &context, certificate)
            add("critical,digitalSignature", NID_key_usage, &context, certificate)
            add("hash", NID_subject_key_identifier, &context, certificate)
            add("keyid:always", NID_authority_key_identifier, &context, certificate)
        }
        for oid in markerOIDs { addNullExtension(oid, to: certificate) }

        let signingKey = issuer?.key ?? subjectKey
        OpenSSL.check(X509_sign(certificate, signingKey, EVP_sha384()) > 0, "X509_sign")
        return certificate
    }

    private func add(_ value: String, _ nid: Int32, _ context: inout X509V3_CTX, _ certificate: OpaquePointer) {
        guard let extensionValue = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            OpenSSL.check(false, "X509V3_EXT_conf_nid(\(value))")
            return
        }
        defer { X509_EXTENSION_free(extensionValue) }
        OpenSSL.check(X509_add_ext(certificate, extensionValue, -1) == 1, "X509_add_ext")
    }

    /// A non-critical extension whose value is DER NULL (`05 00`), as Apple's marker OIDs are.
    private func addNullExtension(_ dotted: String, to certificate: OpaquePointer) {
        guard let object = OBJ_txt2obj(dotted, 1) else { fatalError("TestPKI: bad OID \(dotted)") }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { fatalError("TestPKI: ASN1_OCTET_STRING_new failed") }
        defer { ASN1_OCTET_STRING_free(value) }
        let null: [UInt8] = [0x05, 0x00]
        OpenSSL.check(ASN1_OCTET_STRING_set(value, null, 2) == 1, "ASN1_OCTET_STRING_set")
        guard let extensionValue = X509_EXTENSION_create_by_OBJ(nil, object, 0, value) else {
            OpenSSL.check(false, "X509_EXTENSION_create_by_OBJ")
            return
        }
        defer { X509_EXTENSION_free(extensionValue) }
        OpenSSL.check(X509_add_ext(certificate, extensionValue, -1) == 1, "X509_add_ext")
    }
}
