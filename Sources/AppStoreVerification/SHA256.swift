internal import COpenSSL

/// SHA-256 through OpenSSL's libcrypto.
///
/// ```swift
/// let digest = SHA256.hash(Array("abc".utf8))   // 32 bytes
/// let text = SHA256.hex("abc".utf8)              // "ba7816bf..."
/// ```
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    /// The SHA-256 digest of `first` followed by `second`, without joining them.
    public static func hash(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { output, initialized in
            Prefix(first).digest(continuing: second, into: output.baseAddress!)
            initialized = 32
        }
    }

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
            digest(buffer, into: output.baseAddress!)
            initialized = 32
        }
    }

    /// Writes the digest into a caller-provided 32-byte buffer (no allocation).
    static func digest(_ buffer: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) {
        Prefix(buffer).digest(continuing: UnsafeBufferPointer(start: nil, count: 0), into: output)
    }

    /// A SHA-256 computation part way: the state after a prefix, which can be continued
    /// any number of times with different rests (a value: each continuation works on a copy).
    ///
    /// A JWS's signing input is `header.payload`, and App Store headers (4–5 KB of
    /// certificate chain) repeat for every JWS signed with one certificate: the chain
    /// cache keeps the state after `header.`, so only the payload is hashed per JWS.
    struct Prefix: @unchecked Sendable {
        private var context = SHA256_CTX()

        /// The state after `bytes`.
        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            precondition(copenssl_sha256_init(&context) == 1, "OpenSSL SHA-256 failed")
            update(bytes)
        }

        /// The state after `first` then `second`.
        init(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) {
            self.init(first)
            update(second)
        }

        private mutating func update(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            precondition(copenssl_sha256_update(&context, base, bytes.count) == 1, "OpenSSL SHA-256 failed")
        }

        /// The digest of the prefix followed by `rest` into `output`, and of all that followed
        /// by `first` and `second` into `extended` (each a 32-byte buffer): a JWS's signing
        /// input `header.payload`, and the whole JWS after its `.` and signature.
        func digest(
            continuing rest: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>,
            extendedBy first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>, into extended: UnsafeMutablePointer<UInt8>
        ) {
            var copy = self
            copy.update(rest)
            var longer = copy
            precondition(copenssl_sha256_final(output, &copy.context) == 1, "OpenSSL SHA-256 failed")
            longer.update(first)
            longer.update(second)
            precondition(copenssl_sha256_final(extended, &longer.context) == 1, "OpenSSL SHA-256 failed")
        }

        /// The digest of the prefix followed by `rest`, into a 32-byte buffer.
        func digest(continuing rest: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) {
            var copy = self
            copy.update(rest)
            precondition(copenssl_sha256_final(output, &copy.context) == 1, "OpenSSL SHA-256 failed")
        }
    }
}
