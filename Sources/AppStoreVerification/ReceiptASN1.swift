public import EntitlementCore

/// A strict DER reader for Apple's receipt payload format: every length is checked
/// against what encloses it, nothing is read past an end, nesting is bounded.
public struct DERReader: Sendable {
    /// One element: its tag byte and the bounds of its contents in the reader's bytes.
    public struct Element: Sendable {
        public var tag: UInt8
        public var contents: Range<Int>
    }

    /// Why DER bytes do not read.
    public struct Malformed: Error, Sendable, Hashable {
        public var message: String
        public var offset: Int
    }

    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The element that starts at `offset` and must end by `end`.
    public func element(at offset: Int, end: Int) throws(Malformed) -> Element {
        guard offset < end, end <= bytes.count else { throw Malformed(message: "element expected, found the end", offset: offset) }
        let tag = bytes[offset]
        if tag & 0x1F == 0x1F { throw Malformed(message: "multi-byte tags are not used in receipts", offset: offset) }
        guard offset + 1 < end else { throw Malformed(message: "length missing", offset: offset + 1) }
        let first = bytes[offset + 1]
        var cursor = offset + 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            if count == 0 { throw Malformed(message: "indefinite length is not DER", offset: offset + 1) }
            if count > 4 { throw Malformed(message: "length of \(count) bytes is too long", offset: offset + 1) }
            guard cursor + count <= end else { throw Malformed(message: "length runs past the enclosing element", offset: offset + 1) }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= end - cursor else {
            throw Malformed(message: "length \(length) runs past the enclosing element (\(end - cursor) bytes left)", offset: offset + 1)
        }
        return Element(tag: tag, contents: cursor..<(cursor + length))
    }

    /// The elements one after the other within `range`, which they must fill exactly.
    public func children(of range: Range<Int>) throws(Malformed) -> [Element] {
        var result: [Element] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let element = try element(at: offset, end: range.upperBound)
            result.append(element)
            offset = element.contents.upperBound
        }
        return result
    }

    /// The non-negative INTEGER in `range` (at most 63 bits).
    public func integer(_ element: Element) throws(Malformed) -> Int64 {
        guard element.tag == 0x02 else { throw Malformed(message: "INTEGER expected, found tag \(element.tag)", offset: element.contents.lowerBound) }
        let range = element.contents
        guard !range.isEmpty else { throw Malformed(message: "empty INTEGER", offset: range.lowerBound) }
        if bytes[range.lowerBound] & 0x80 != 0 { throw Malformed(message: "negative INTEGER", offset: range.lowerBound) }
        var digits = range
        while digits.count > 1, bytes[digits.lowerBound] == 0 { digits = (digits.lowerBound + 1)..<digits.upperBound }
        guard digits.count <= 8, !(digits.count == 8 && bytes[digits.lowerBound] & 0x80 != 0) else {
            throw Malformed(message: "INTEGER too large", offset: range.lowerBound)
        }
        var value: Int64 = 0
        for index in digits { value = value << 8 | Int64(bytes[index]) }
        return value
    }

    /// The text of a UTF8String, IA5String, PrintableString or VisibleString.
    public func text(_ element: Element) throws(Malformed) -> String {
        guard [0x0C, 0x16, 0x13, 0x1A].contains(element.tag) else {
            throw Malformed(message: "string expected, found tag \(element.tag)", offset: element.contents.lowerBound)
        }
        guard let text = String(validating: bytes[element.contents], as: UTF8.self) else {
            throw Malformed(message: "string is not valid UTF-8", offset: element.contents.lowerBound)
        }
        return text
    }
}

/// Reads Apple's receipt payload (the content the PKCS#7 signature covers).
public enum ReceiptPayloadReader {
    /// Why a payload does not read: the field and what is wrong.
    public struct Invalid: Error, Sendable, Hashable {
        public var message: String
    }

    /// Reads `bytes`: a SET of attributes (type, version, value), field 17 an
    /// in-app entry of its own attributes.
    public static func read(_ bytes: [UInt8]) throws(Invalid) -> ReceiptPayload {
        let reader = DERReader(bytes)
        do {
            let root = try reader.element(at: 0, end: bytes.count)
            guard root.tag == 0x31, root.contents.upperBound == bytes.count else {
                throw Invalid(message: "the receipt payload is not one ASN.1 SET")
            }
            var environment: String?
            var bundleId: String?
            var version: String?
            var originalVersion: String?
            var creation: Int64?
            var entries: [ReceiptInAppEntry] = []
            for (type, value) in try attributes(reader, root.contents) {
                switch type {
                case 0: environment = try string(reader, value, field: type)
                case 2: bundleId = try string(reader, value, field: type)
                case 3: version = try string(reader, value, field: type)
                case 12: creation = try date(reader, value, field: type)
                case 17: entries.append(try entry(reader, value))
                case 19: originalVersion = try string(reader, value, field: type)
                default: continue
                }
            }
            guard let bundleId else { throw Invalid(message: "the receipt has no bundle id (field 2)") }
            guard let creation else { throw Invalid(message: "the receipt has no creation date (field 12)") }
            return ReceiptPayload(
                environmentName: environment, bundleId: bundleId, applicationVersion: version,
                originalApplicationVersion: originalVersion, creationDate: creation, inApp: entries)
        } catch let malformed as DERReader.Malformed {
            throw Invalid(message: "the receipt payload is not well-formed ASN.1 at byte \(malformed.offset): \(malformed.message)")
        } catch let invalid as Invalid {
            throw invalid
        } catch {
            throw Invalid(message: "the receipt payload does not read")
        }
    }

    /// The attributes of a SET: (type, the value OCTET STRING's contents).
    static func attributes(_ reader: DERReader, _ range: Range<Int>) throws -> [(Int64, Range<Int>)] {
        var result: [(Int64, Range<Int>)] = []
        for element in try reader.children(of: range) {
            guard element.tag == 0x30 else { throw Invalid(message: "a receipt attribute is not a SEQUENCE") }
            let parts = try reader.children(of: element.contents)
            guard parts.count == 3, parts[2].tag == 0x04 else {
                throw Invalid(message: "a receipt attribute is not (type, version, OCTET STRING value)")
            }
            result.append((try reader.integer(parts[0]), parts[2].contents))
        }
        return result
    }

    /// The one element a value holds, filling it.
    static func single(_ reader: DERReader, _ value: Range<Int>, field: Int64) throws -> DERReader.Element {
        let element = try reader.element(at: value.lowerBound, end: value.upperBound)
        guard element.contents.upperBound == value.upperBound else {
            throw Invalid(message: "field \(field) holds more than one value")
        }
        return element
    }

    static func string(_ reader: DERReader, _ value: Range<Int>, field: Int64) throws -> String {
        do { return try reader.text(single(reader, value, field: field)) } catch let m as DERReader.Malformed {
            throw Invalid(message: "field \(field): \(m.message)")
        }
    }

    static func integer(_ reader: DERReader, _ value: Range<Int>, field: Int64) throws -> Int64 {
        do { return try reader.integer(single(reader, value, field: field)) } catch let m as DERReader.Malformed {
            throw Invalid(message: "field \(field): \(m.message)")
        }
    }

    /// An RFC 3339 date (`2019-12-10T12:54:58Z`, optional fraction); `nil` for the empty string Apple writes for none.
    static func date(_ reader: DERReader, _ value: Range<Int>, field: Int64) throws -> Int64? {
        let text = try string(reader, value, field: field)
        if text.isEmpty { return nil }
        guard let millis = ReceiptDate.millis(text) else { throw Invalid(message: "field \(field): \"\(text)\" is not an RFC 3339 UTC date") }
        return millis
    }

    static func entry(_ reader: DERReader, _ value: Range<Int>) throws -> ReceiptInAppEntry {
        let set = try single(reader, value, field: 17)
        guard set.tag == 0x31 else { throw Invalid(message: "field 17: an in-app entry is not an ASN.1 SET") }
        var quantity: Int64 = 1
        var productId: String?
        var transactionId: String?
        var originalTransactionId: String?
        var purchaseDate: Int64?
        var originalPurchaseDate: Int64?
        var expiresDate: Int64?
        var webOrder: String?
        var cancellation: Int64?
        var trial = false
        var intro = false
        for (type, value) in try attributes(reader, set.contents) {
            switch type {
            case 1701: quantity = try integer(reader, value, field: type)
            case 1702: productId = try string(reader, value, field: type)
            case 1703: transactionId = try string(reader, value, field: type)
            case 1704: purchaseDate = try date(reader, value, field: type)
            case 1705: originalTransactionId = try string(reader, value, field: type)
            case 1706: originalPurchaseDate = try date(reader, value, field: type)
            case 1708: expiresDate = try date(reader, value, field: type)
            case 1711:
                let id = try integer(reader, value, field: type)
                webOrder = id == 0 ? nil : String(id)
            case 1712: cancellation = try date(reader, value, field: type)
            case 1713: trial = try integer(reader, value, field: type) != 0
            case 1719: intro = try integer(reader, value, field: type) != 0
            default: continue
            }
        }
        guard let transactionId, !transactionId.isEmpty else { throw Invalid(message: "an in-app entry has no transaction id (field 1703)") }
        guard let productId, !productId.isEmpty else { throw Invalid(message: "in-app entry \(transactionId) has no product id (field 1702)") }
        guard let purchaseDate else { throw Invalid(message: "in-app entry \(transactionId) has no purchase date (field 1704)") }
        return ReceiptInAppEntry(
            quantity: quantity, productId: productId, transactionId: transactionId,
            originalTransactionId: (originalTransactionId?.isEmpty ?? true) ? transactionId : originalTransactionId!,
            purchaseDate: purchaseDate, originalPurchaseDate: originalPurchaseDate, expiresDate: expiresDate,
            webOrderLineItemId: webOrder, cancellationDate: cancellation, isTrialPeriod: trial, isInIntroOfferPeriod: intro)
    }
}

/// The dates of Apple's receipt format: RFC 3339, `YYYY-MM-DDTHH:MM:SS[.fff]Z`, or with an
/// offset (`+0100`, `+01:00`) as StoreKit testing in Xcode writes them.
enum ReceiptDate {
    static func millis(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            guard !range.isEmpty, range.upperBound <= b.count else { return nil }
            var value: Int64 = 0
            for i in range {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                value = value * 10 + Int64(b[i] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month),
            day >= 1, day <= CivilTime.daysIn(month: month, year: year), hour < 24, minute < 60, second < 61
        else { return nil }
        var cursor = 19
        var millisecond: Int64 = 0
        if b[cursor] == UInt8(ascii: ".") {
            var end = cursor + 1
            while end < b.count, b[end] >= 48, b[end] <= 57 { end += 1 }
            guard end - cursor - 1 >= 1, end - cursor - 1 <= 9, var scaled = number((cursor + 1)..<end) else { return nil }
            var digits = end - cursor - 1
            while digits > 3 { scaled /= 10; digits -= 1 }
            while digits < 3 { scaled *= 10; digits += 1 }
            millisecond = scaled
            cursor = end
        }
        guard cursor < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch b[cursor] {
        case UInt8(ascii: "Z"):
            guard cursor + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let rest = b.count - cursor - 1
            let colon = rest == 5 && b[cursor + 3] == UInt8(ascii: ":")
            guard rest == 4 || colon, let hours = number((cursor + 1)..<(cursor + 3)),
                let minutes = number((cursor + (colon ? 4 : 3))..<b.count), hours < 24, minutes < 60
            else { return nil }
            offsetMinutes = (hours * 60 + minutes) * (b[cursor] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        return CivilTime.millis(year: year, month: month, day: day, hour: hour, minute: minute, second: second, millisecond: millisecond)
            - offsetMinutes * 60_000
    }
}
