internal import COpenSSL
import Foundation

/// The In-App Purchase key from App Store Connect (`SubscriptionKey_XXXXXXXXXX.p8`): an
/// unencrypted PEM PKCS#8 EC private key on P-256, loaded once and used for every
/// ES256 signature the engine makes (API bearer tokens, offer signatures).
///
/// ```swift
/// let key = try SigningKey(path: "SubscriptionKey_2X9R4HXF34.p8")
/// let raw = key.signES256(Array("header.payload".utf8))   // 64 bytes r || s
/// ```
///
/// Signing is thread-safe: each call uses a context of its own.
public final class SigningKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Reads and checks the key file at `path`.
    /// - Throws: ``SigningKeyError``: `KEY_NOT_FOUND`, `KEY_UNREADABLE`, `KEY_ENCRYPTED`,
    ///   `KEY_WRONG_TYPE` or `KEY_INVALID`, naming the file and what to do.
    public convenience init(path: String) throws(SigningKeyError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw SigningKeyError(
                .notFound,
                "no key file at \(path): download the In-App Purchase key (SubscriptionKey_<keyId>.p8) from App Store Connect > Users and Access > Integrations > In-App Purchase and set appStoreServerAPI.privateKeyPath to it")
        }
        guard !isDirectory.boolValue else {
            throw SigningKeyError(.unreadable, "\(path) is a directory, not the .p8 key file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SigningKeyError(.unreadable, "cannot read the key file \(path) (check its permissions)")
        }
        try self.init(pem: Array(data), source: path)
    }

    /// Parses a PEM private key (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
    /// - Parameter source: how to name the key in errors (its path).
    /// - Throws: ``SigningKeyError``.
    public init(pem: [UInt8], source: String) throws(SigningKeyError) {
        let text = String(decoding: pem, as: UTF8.self)
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw SigningKeyError(
                .encrypted,
                "\(source) is a password-protected key; App Store Connect's .p8 keys are not encrypted: use the file as downloaded, or decrypt it: openssl pkey -in \(source) -out SubscriptionKey.p8")
        }
        guard text.contains("-----BEGIN") else {
            throw SigningKeyError(.invalid, "\(source) is not a PEM key (expected -----BEGIN PRIVATE KEY-----)")
        }
        let parsed: OpaquePointer? = pem.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that refuses: OpenSSL must never prompt the terminal for a password.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        guard let key = parsed else {
            let reason = OpenSSLError.drain()
            if reason.contains("bad decrypt") || reason.contains("PASSWORD") || reason.contains("password") {
                throw SigningKeyError(.encrypted, "\(source) is a password-protected key; use the unencrypted .p8 from App Store Connect")
            }
            throw SigningKeyError(.invalid, "\(source) is not a readable PEM private key (\(reason))")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            let type = Self.typeName(key)
            EVP_PKEY_free(key)
            throw SigningKeyError(
                .wrongType, "\(source) is \(type) key; the In-App Purchase key must be an EC P-256 key (ES256)")
        }
        let group = Self.groupName(key)
        guard group == "prime256v1" || group == "P-256" || group == "secp256r1" else {
            EVP_PKEY_free(key)
            throw SigningKeyError(
                .wrongType, "\(source) is an EC key on \(group ?? "an unknown curve"); the In-App Purchase key must be on P-256 (ES256)")
        }
        pointer = key
    }

    deinit { EVP_PKEY_free(pointer) }

    /// An ES256 signature (RFC 7518 section 3.4) of `message`: SHA-256, ECDSA P-256, as the
    /// raw 64 bytes `r || s` a JWS carries.
    public func signES256(_ message: [UInt8]) -> [UInt8] {
        Self.rawSignature(fromDER: signDER(message))
    }

    /// An ECDSA P-256 SHA-256 signature of `message` in DER (`ECDSA-Sig-Value`), as the
    /// original promotional offer signature carries it.
    public func signDER(_ message: [UInt8]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL: EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else {
            fatalError("OpenSSL: EVP_DigestSignInit failed: \(OpenSSLError.drain())")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            fatalError("OpenSSL: EVP_DigestSign failed: \(OpenSSLError.drain())")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else {
            fatalError("OpenSSL: EVP_DigestSign failed: \(OpenSSLError.drain())")
        }
        return Array(der.prefix(length))
    }

    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo): what
    /// App Store Connect holds, and what a test verifies with.
    public var publicKeyPEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { fatalError("OpenSSL: BIO_new failed") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, pointer) == 1 else { fatalError("OpenSSL: PEM_write_bio_PUBKEY failed") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = copenssl_bio_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Raw `r || s` (32 bytes each, big-endian) from a DER `ECDSA-Sig-Value`.
    static func rawSignature(fromDER der: [UInt8]) -> [UInt8] {
        der.withUnsafeBufferPointer { buffer -> [UInt8] in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else {
                fatalError("OpenSSL produced a signature that is not DER ECDSA-Sig-Value")
            }
            defer { ECDSA_SIG_free(signature) }
            var raw = [UInt8](repeating: 0, count: 64)
            raw.withUnsafeMutableBufferPointer { out in
                _ = BN_bn2binpad(ECDSA_SIG_get0_r(signature), out.baseAddress, 32)
                _ = BN_bn2binpad(ECDSA_SIG_get0_s(signature), out.baseAddress! + 32, 32)
            }
            return raw
        }
    }

    private static func groupName(_ key: OpaquePointer) -> String? {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: name[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func typeName(_ key: OpaquePointer) -> String {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: return "an RSA"
        case EVP_PKEY_ED25519: return "an Ed25519"
        case EVP_PKEY_DSA: return "a DSA"
        default:
            if let name = EVP_PKEY_get0_type_name(key) { return "a " + String(cString: name) }
            return "another kind of"
        }
    }
}

/// Why the In-App Purchase key cannot be used.
public struct SigningKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable reason.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// There is no file at the configured path.
        public static let notFound = Code(rawValue: "KEY_NOT_FOUND")
        /// The file exists but cannot be read.
        public static let unreadable = Code(rawValue: "KEY_UNREADABLE")
        /// The key is password-protected.
        public static let encrypted = Code(rawValue: "KEY_ENCRYPTED")
        /// The key is not an EC P-256 key (RSA, P-384, Ed25519...).
        public static let wrongType = Code(rawValue: "KEY_WRONG_TYPE")
        /// The file is not a PEM private key.
        public static let invalid = Code(rawValue: "KEY_INVALID")
        public var description: String { rawValue }
    }

    public var code: Code
    /// What is wrong and what to do, for a person.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

/// OpenSSL's error queue as text.
enum OpenSSLError {
    /// Empties the calling thread's OpenSSL error queue and returns its entries, joined
    /// (COpenSSL's `copenssl_error_drain`).
    static func drain() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        _ = copenssl_error_drain(&buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
