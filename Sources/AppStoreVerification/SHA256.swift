internal import COpenSSL

/// SHA-256 through OpenSSL's libcrypto.
///
/// ```swift
/// let digest = SHA256.hash(Array("abc".utf8))   // 32 bytes
/// let text = SHA256.hex("abc".utf8)              // "ba7816bf..."
/// ```
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ digest($0) }) { return digest }
        return Array(bytes).withUnsafeBufferPointer { digest($0) }
    }

    /// The SHA-256 digest of `bytes` as 64 lowercase hexadecimal digits.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        hexString(hash(bytes))
    }

    /// The SHA-256 digest of the UTF-8 bytes of `string` as 64 lowercase hexadecimal digits.
    public static func hex(_ string: String) -> String {
        var copy = string
        return hexString(copy.withUTF8 { digest($0) })
    }

    /// Lowercase hexadecimal digits of `bytes`.
    static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func digest(_ buffer: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { output, initialized in
            var length: UInt32 = 0
            let ok = EVP_Digest(buffer.baseAddress, buffer.count, output.baseAddress, &length, OpenSSLAlgorithms.shared.sha256, nil)
            precondition(ok == 1 && length == 32, "OpenSSL SHA-256 failed")
            initialized = 32
        }
    }

    /// Writes the digest into a caller-provided 32-byte buffer (no allocation).
    static func digest(_ buffer: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) {
        var length: UInt32 = 0
        let ok = EVP_Digest(buffer.baseAddress, buffer.count, output, &length, OpenSSLAlgorithms.shared.sha256, nil)
        precondition(ok == 1 && length == 32, "OpenSSL SHA-256 failed")
    }
}

/// Algorithms fetched once from OpenSSL's default provider, shared by all threads
/// (fetched `EVP_MD` objects are immutable and reference counted).
final class OpenSSLAlgorithms: @unchecked Sendable {
    static let shared = OpenSSLAlgorithms()

    let sha256: OpaquePointer

    private init() {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("OpenSSL has no SHA256") }
        sha256 = md
    }
}
