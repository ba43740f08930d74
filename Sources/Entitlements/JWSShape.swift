import EntitlementCore

/// The test that tells a string holding a compact JWS (RFC 7515 section 7.1) from
/// any other string, without verifying anything.
///
/// A string is JWS-shaped when it is three segments separated by exactly two `.`,
/// the first of them non-empty, unpadded base64url of a JSON object that has an
/// `alg` member (the member RFC 7515 requires of every JWS header). The payload and
/// signature segments are not read: what they hold is the verifier's to judge.
///
/// The test is cheap for the strings App Store documents carry besides their JWS
/// (ids, dates, tokens, environments): a string with other than two dots is refused
/// after one pass over its bytes, and only the first segment of one with two dots
/// (a bundle id such as `com.example.app`, say) is decoded, which fails at its
/// first byte unless it is a JSON object.
enum JWSShape {
    /// Whether `text` is shaped like a compact JWS.
    static func matches(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var firstDot: Int?
            var dots = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
                dots += 1
                if dots > 2 { return false }
                if firstDot == nil { firstDot = index }
            }
            guard dots == 2, let headerEnd = firstDot, headerEnd > 0 else { return false }
            guard let header = Base64.decodeURL(UnsafeBufferPointer(rebasing: bytes[..<headerEnd])),
                case .object(let object)? = try? JSONParser(maximumDepth: 8).parse(header)
            else { return false }
            return object["alg"] != nil
        }
    }
}
