internal import COpenSSL
import JSONAndBase64

/// Signs webhook deliveries as the Standard Webhooks specification says
/// (standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
/// keyed by the bytes of the secret's base64 after `whsec_`. Any receiver's Standard
/// Webhooks library verifies what it signs.
///
/// ```swift
/// let signer = try WebhookSigner(secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
/// signer.signature(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1614265330, body: Array(#"{"test": 2432232314}"#.utf8))
/// // "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/// ```
public struct WebhookSigner: Sendable {
    /// The HMAC key: the secret's base64 decoded.
    public let key: [UInt8]

    /// The prefix of a Standard Webhooks symmetric secret.
    public static let secretPrefix = "whsec_"

    /// Reads a `whsec_<base64>` secret (standard base64 with its padding, 24 to 64 bytes).
    /// - Returns: `nil` when `secret` is not one.
    public init?(secret: String) {
        guard secret.hasPrefix(Self.secretPrefix),
            let key = Base64.decodeStandardPadded(String(secret.dropFirst(Self.secretPrefix.count))),
            (24...64).contains(key.count)
        else { return nil }
        self.key = key
    }

    /// The `webhook-signature` header's value for one delivery.
    /// - Parameters:
    ///   - id: The `webhook-id` header (the same on every attempt at one line).
    ///   - timestamp: The `webhook-timestamp` header, seconds since 1970 (fresh on each attempt).
    ///   - body: The request body, exactly as sent.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return "v1," + Base64.encodeStandardPadded(Self.hmacSHA256(key: key, message: message))
    }

    /// The three Standard Webhooks headers of one delivery.
    public func headers(id: String, timestamp: Int64, body: [UInt8]) -> [(name: String, value: String)] {
        [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(id: id, timestamp: timestamp, body: body)),
        ]
    }

    /// HMAC-SHA256 through OpenSSL.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        let done = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                output.withUnsafeMutableBufferPointer { out in
                    EVP_Q_mac(
                        nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count, messageBytes.baseAddress,
                        messageBytes.count, out.baseAddress, out.count, &length)
                }
            }
        }
        guard done != nil, length == 32 else { fatalError("OpenSSL: HMAC-SHA256 failed: \(OpenSSLError.drain())") }
        return output
    }
}
