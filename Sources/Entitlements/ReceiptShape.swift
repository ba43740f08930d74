import EntitlementCore

/// The test that tells a string holding a legacy app receipt (specification section
/// 16: PKCS#7 SignedData in standard base64) from any other string, without
/// verifying anything.
///
/// A string is receipt-shaped when it is standard base64 (whitespace allowed, as
/// between the lines of wrapped base64) whose bytes open a DER or BER SEQUENCE
/// whose first member is the object identifier of PKCS#7 SignedData,
/// 1.2.840.113549.1.7.2: how every app receipt Apple signed begins. Only the first
/// 32 base64 characters are decoded, and a string whose first character is not `M`
/// (the first six bits of a SEQUENCE's tag, 0x30) is refused at once, so the test is
/// cheap for the ids, dates and tokens App Store documents carry.
enum ReceiptShape {
    /// The content type of PKCS#7 SignedData, as DER: tag, length, 1.2.840.113549.1.7.2.
    static let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]

    /// Whether `text` is shaped like a base64 app receipt.
    static func matches(_ text: String) -> Bool {
        var head: [UInt8] = []
        head.reserveCapacity(32)
        for byte in text.utf8 {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                if head.isEmpty && byte != UInt8(ascii: "M") { return false }
                if head.count < 32 { head.append(byte) }
            default:
                return false
            }
        }
        guard head.count == 32, !head.contains(UInt8(ascii: "=")),
            let bytes = head.withUnsafeBufferPointer(Base64.decodeStandardPadded), bytes.first == 0x30, bytes.count > 2
        else { return false }
        // The SEQUENCE's length: indefinite (0x80), short, or long form of 1 to 4 bytes.
        let lengthByte = bytes[1]
        let contentStart: Int
        switch lengthByte {
        case 0x80: contentStart = 2
        case 0x81...0x84: contentStart = 2 + Int(lengthByte & 0x7F)
        case 0x00..<0x80: contentStart = 2
        default: return false
        }
        guard contentStart + signedDataOID.count <= bytes.count else { return false }
        return bytes[contentStart..<(contentStart + signedDataOID.count)].elementsEqual(signedDataOID)
    }
}
