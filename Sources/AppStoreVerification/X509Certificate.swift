internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An owned OpenSSL `X509`, freed on deinit.
final class X509Certificate: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Parses one DER certificate that must span all of `der` (no trailing bytes).
    init?(der: UnsafeBufferPointer<UInt8>) {
        guard let base = der.baseAddress, der.count > 0, der.count <= 64 * 1024 else { return nil }
        var cursor: UnsafePointer<UInt8>? = base
        guard let certificate = d2i_X509(nil, &cursor, der.count) else {
            ERR_clear_error()
            return nil
        }
        guard cursor == base + der.count else {
            X509_free(certificate)
            return nil
        }
        pointer = certificate
    }

    /// Parses one DER certificate held in an array.
    static func parse(_ der: [UInt8]) -> X509Certificate? {
        der.withUnsafeBufferPointer { X509Certificate(der: $0) }
    }

    /// Takes a new reference to a borrowed `X509` (for example from a verified chain).
    init(borrowing certificate: OpaquePointer) {
        X509_up_ref(certificate)
        pointer = certificate
    }

    deinit { X509_free(pointer) }

    /// The DER encoding.
    var der: [UInt8] {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, initialized in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            initialized = Int(i2d_X509(pointer, &cursor))
        }
    }

    /// Whether the certificate carries an extension with the dotted `oid`, critical or not.
    func hasExtension(_ oid: ObjectIdentifier) -> Bool {
        X509_get_ext_by_OBJ(pointer, oid.pointer, -1) >= 0
    }

    /// The subject's common name as `CN=...` (or the whole subject when it has none), for messages.
    var subject: String {
        guard let name = X509_get_subject_name(pointer) else { return "no subject" }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        if index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry),
            let bytes = ASN1_STRING_get0_data(data)
        {
            let length = Int(ASN1_STRING_length(data))
            return "CN=" + String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
        }
        guard let line = X509_NAME_oneline(name, nil, 0) else { return "?" }
        defer { copenssl_free(line) }
        return String(cString: line)
    }

    /// `notBefore` in milliseconds since 1970.
    var notBeforeMillis: Int64? { Self.millis(X509_get0_notBefore(pointer)) }
    /// `notAfter` in milliseconds since 1970.
    var notAfterMillis: Int64? { Self.millis(X509_get0_notAfter(pointer)) }

    private static func millis(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var value = tm()
        guard ASN1_TIME_to_tm(time, &value) == 1 else { return nil }
        return UTCTime.millis(
            year: Int(value.tm_year) + 1900, month: Int(value.tm_mon) + 1, day: Int(value.tm_mday),
            hour: Int(value.tm_hour), minute: Int(value.tm_min), second: Int(value.tm_sec))
    }

    /// The subject public key when it is an EC key on P-256 (the only key ES256 uses).
    /// - Parameter keyTableAfter: see ``P256PublicKey/init(owning:keyTableAfter:)``.
    func p256PublicKey(keyTableAfter: Int? = nil) -> P256PublicKey? {
        guard let key = X509_get_pubkey(pointer) else {  // new reference
            ERR_clear_error()
            return nil
        }
        let handle = P256PublicKey(owning: key, keyTableAfter: keyTableAfter)
        return handle.isP256 ? handle : nil
    }
}

/// An owned ASN.1 object identifier.
final class ObjectIdentifier: @unchecked Sendable {
    let pointer: OpaquePointer
    let dotted: String

    init(_ dotted: String) {
        guard let object = OBJ_txt2obj(dotted, 1) else { fatalError("invalid OID \(dotted)") }
        pointer = object
        self.dotted = dotted
    }

    deinit { ASN1_OBJECT_free(pointer) }

    /// Apple's receipt-signing leaf certificate extension.
    static let appleReceiptSigner = ObjectIdentifier("1.2.840.113635.100.6.11.1")
    /// Apple's Worldwide Developer Relations intermediate certificate extension.
    static let appleWWDRIntermediate = ObjectIdentifier("1.2.840.113635.100.6.2.1")
}
