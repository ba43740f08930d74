internal import COpenSSL
import JSONAndBase64

/// One in-app entry of a test receipt, every field type of Apple's receipt format.
public struct TestReceiptEntry: Sendable {
    public var quantity: Int64
    public var productId: String
    public var transactionId: String
    public var originalTransactionId: String
    /// Milliseconds since 1970.
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var webOrderLineItemId: Int64?
    public var cancellationDate: Int64?
    public var isTrialPeriod: Bool
    public var isInIntroOfferPeriod: Bool

    public init(
        quantity: Int64 = 1, productId: String, transactionId: String, originalTransactionId: String? = nil,
        purchaseDate: Int64, originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, webOrderLineItemId: Int64? = nil,
        cancellationDate: Int64? = nil, isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false
    ) {
        self.quantity = quantity
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.webOrderLineItemId = webOrderLineItemId
        self.cancellationDate = cancellationDate
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
    }
}

/// Apple's ASN.1 receipt payload, written in DER: a SET of (type, version, OCTET STRING value).
public enum TestReceipts {
    /// The digest a test receipt is signed with.
    public enum Digest: Sendable { case sha1, sha256 }

    /// A receipt payload: field 0 `environment` (`nil` leaves it out), 2 bundle id, 3 app
    /// version, 12 creation date, 19 original app version, 17 for each entry.
    public static func payload(
        bundleId: String, environment: String? = "ProductionSandbox", applicationVersion: String = "1.0",
        creationDate: Int64, entries: [TestReceiptEntry] = []
    ) -> [UInt8] {
        var attributes: [[UInt8]] = []
        if let environment { attributes.append(attribute(0, utf8(environment))) }
        attributes.append(attribute(2, utf8(bundleId)))
        attributes.append(attribute(3, utf8(applicationVersion)))
        attributes.append(attribute(12, date(creationDate)))
        attributes.append(attribute(19, utf8("1.0")))
        for entry in entries {
            var fields: [[UInt8]] = [
                attribute(1701, integer(entry.quantity)),
                attribute(1702, utf8(entry.productId)),
                attribute(1703, utf8(entry.transactionId)),
                attribute(1704, date(entry.purchaseDate)),
                attribute(1705, utf8(entry.originalTransactionId)),
                attribute(1706, date(entry.originalPurchaseDate ?? entry.purchaseDate)),
                attribute(1708, entry.expiresDate.map(date) ?? ia5("")),
                attribute(1712, entry.cancellationDate.map(date) ?? ia5("")),
                attribute(1713, integer(entry.isTrialPeriod ? 1 : 0)),
                attribute(1719, integer(entry.isInIntroOfferPeriod ? 1 : 0)),
            ]
            if let id = entry.webOrderLineItemId { fields.append(attribute(1711, integer(id))) }
            attributes.append(attribute(17, set(fields)))
        }
        return set(attributes)
    }

    static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        let count = contents.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else {
            var bytes: [UInt8] = []
            var rest = count
            while rest > 0 {
                bytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(bytes.count))
            out += bytes
        }
        return out + contents
    }

    static func integer(_ value: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = UInt64(value)
        repeat {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        } while rest > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
    static func set(_ elements: [[UInt8]]) -> [UInt8] { tlv(0x31, elements.flatMap { $0 }) }
    static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }

    /// RFC 3339 UTC, whole seconds, as Apple writes receipt dates.
    static func date(_ millis: Int64) -> [UInt8] {
        let seconds = millis / 1000
        var days = seconds / 86_400
        let secondOfDay = seconds % 86_400
        // Civil date from days since 1970 (Howard Hinnant's algorithm).
        days += 719_468
        let era = days / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let text =
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))Z"
        return ia5(text)
    }
}

extension TestPKI {
    /// A PKCS#7 SignedData receipt (DER) embedding `payload`, signed by this PKI's leaf with
    /// `digest`, no signed attributes (as Apple signs receipts), carrying the leaf, the
    /// intermediate and (unless `includeRoot` is false) the root.
    public func signReceipt(_ payload: [UInt8], digest: TestReceipts.Digest = .sha256, includeRoot: Bool = true) -> [UInt8] {
        let content = payload.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        OpenSSL.check(content != nil, "BIO_new_mem_buf")
        defer { BIO_free(content) }
        let flags = Int32(PKCS7_BINARY | PKCS7_PARTIAL | PKCS7_NOATTR)
        guard let pkcs7 = PKCS7_sign(nil, nil, nil, nil, flags) else {
            OpenSSL.check(false, "PKCS7_sign")
            return []
        }
        defer { PKCS7_free(pkcs7) }
        let md = digest == .sha1 ? EVP_sha1() : EVP_sha256()
        OpenSSL.check(PKCS7_sign_add_signer(pkcs7, material.leaf, material.leafKey, md, Int32(PKCS7_NOATTR)) != nil, "PKCS7_sign_add_signer")
        OpenSSL.check(PKCS7_add_certificate(pkcs7, material.intermediate) == 1, "PKCS7_add_certificate")
        if includeRoot { OpenSSL.check(PKCS7_add_certificate(pkcs7, material.root) == 1, "PKCS7_add_certificate") }
        OpenSSL.check(PKCS7_final(pkcs7, content, Int32(PKCS7_BINARY)) == 1, "PKCS7_final")
        let length = i2d_PKCS7(pkcs7, nil)
        OpenSSL.check(length > 0, "i2d_PKCS7")
        return [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, initialized in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            initialized = Int(i2d_PKCS7(pkcs7, &cursor))
        }
    }

    /// ``signReceipt(_:digest:includeRoot:)`` in standard base64, as apps sent it to verifyReceipt.
    public func receiptBase64(_ payload: [UInt8], digest: TestReceipts.Digest = .sha256) -> String {
        Base64Encoding.standard(signReceipt(payload, digest: digest))
    }
}
