import EntitlementCore

/// One signed item found in an input document, and the kind it must be.
public struct InputItem: Sendable {
    /// Which kind of JWS the document said this is.
    public enum Expected: Sendable {
        case notification, transaction, renewalInfo, appTransaction
        /// A legacy app receipt in base64 (specification section 16).
        case receipt
        /// A bare JWS: classified by its decoded payload.
        case any
    }

    public var jws: String
    public var expected: Expected
}

/// Splits an input document (specification section 1) into the signed items it holds.
public enum InputDocument {
    /// The items of one document, or why the document is not a well-formed input.
    public static func items(_ bytes: ArraySlice<UInt8>) -> Result<[InputItem], MalformedInput> {
        let trimmed = trimmed(bytes)
        guard let first = trimmed.first else { return .failure(MalformedInput("empty input")) }
        if first != UInt8(ascii: "{") && first != UInt8(ascii: "\"") && first != UInt8(ascii: "[") {
            // A bare JWS.
            guard let text = String(validating: trimmed, as: UTF8.self) else {
                return .failure(MalformedInput("input is not valid UTF-8"))
            }
            // A JSON number, true, false or null is neither a JWS (two dots) nor a receipt
            // (which opens with "MI"): say what it is.
            if Array("-0123456789tfn".utf8).contains(first), let scalar = try? JSONParser().parse(trimmed) {
                return .failure(
                    MalformedInput(
                        "a JSON \(scalar.typeName) is no input: give a JSON object of specification section 1, a JWS string or a base64 receipt"
                    ))
            }
            return .success([InputItem(jws: text, expected: bareKind(text))])
        }
        if let jws = compactNotificationBody(trimmed) {
            return .success([InputItem(jws: jws, expected: .notification)])
        }
        let json: JSONValue
        do { json = try JSONParser().parse(trimmed) } catch { return .failure(MalformedInput(error.description)) }
        return items(json)
    }

    /// Apple's notification body exactly as it POSTs it, `{"signedPayload":"<JWS>"}`
    /// with no escape, quote, control character or non-ASCII byte inside the string
    /// (so that the string means exactly its bytes): read without building a JSON
    /// tree of the whole 15 KB body. Anything else takes the strict parser. (What the
    /// string holds is the verifier's to judge, on either path alike.)
    static func compactNotificationBody(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let inner = notificationBodyString(bytes) else { return nil }
        return inner.withUnsafeBufferPointer { inner in
            // ASCII only (checked): the String is made without validating again.
            JSONParser.isPlainStringContent(inner) ? String(decoding: inner, as: UTF8.self) : nil
        }
    }

    /// The bytes between the quotes of `{"signedPayload":"…"}` when `bytes` (already
    /// trimmed) is that and nothing else, whatever they are: they mean exactly the string
    /// only when ``JSONParser/isPlainStringContent(_:)`` says so.
    static func notificationBodyString(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let prefix = Array(#"{"signedPayload":""#.utf8)
        let suffix = Array(#""}"#.utf8)
        guard bytes.count > prefix.count + suffix.count, bytes.starts(with: prefix), bytes.suffix(2).elementsEqual(suffix) else {
            return nil
        }
        return bytes[(bytes.startIndex + prefix.count)..<(bytes.endIndex - suffix.count)]
    }

    /// `bytes` without the whitespace around it and a leading UTF-8 byte order mark
    /// (editors on Windows start files with one): neither is part of the document.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        if bytes[start..<end].starts(with: [0xEF, 0xBB, 0xBF]) {
            start += 3
            while start < end, isSpace(bytes[start]) { start += 1 }
        }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    static func items(_ json: JSONValue) -> Result<[InputItem], MalformedInput> {
        switch json {
        case .string(let jws):
            return .success([InputItem(jws: jws, expected: bareKind(jws))])
        case .object(let object):
            func jws(_ value: JSONValue, _ field: String) -> Result<String, MalformedInput> {
                if case .string(let text) = value { return .success(text) }
                return .failure(MalformedInput("\"\(field)\" must be a JWS string, found \(value.typeName)"))
            }
            if let v1 = V1Notification.rejection(object) { return .failure(v1) }
            if let conflict = signedFieldConflict(object) { return .failure(conflict) }
            // After the conflict check: the positions searched are those of the one form present.
            if let stray = StraySignedData.rejection(object) { return .failure(stray) }
            if let value = object["receipt-data"] {
                guard case .string(let text) = value else {
                    return .failure(MalformedInput("\"receipt-data\" must be a base64 receipt string, found \(value.typeName)"))
                }
                return .success([InputItem(jws: text, expected: .receipt)])
            }
            if let value = object["signedPayload"] {
                return jws(value, "signedPayload").map { [InputItem(jws: $0, expected: .notification)] }
            }
            if let value = object["signedTransactionInfo"] {
                var items: [InputItem] = []
                switch jws(value, "signedTransactionInfo") {
                case .success(let text): items.append(InputItem(jws: text, expected: .transaction))
                case .failure(let error): return .failure(error)
                }
                if let renewal = object["signedRenewalInfo"] {
                    switch jws(renewal, "signedRenewalInfo") {
                    case .success(let text): items.append(InputItem(jws: text, expected: .renewalInfo))
                    case .failure(let error): return .failure(error)
                    }
                }
                return .success(items)
            }
            if let value = object["signedRenewalInfo"] {
                return jws(value, "signedRenewalInfo").map { [InputItem(jws: $0, expected: .renewalInfo)] }
            }
            if let value = object["signedAppTransactionInfo"] {
                return jws(value, "signedAppTransactionInfo").map { [InputItem(jws: $0, expected: .appTransaction)] }
            }
            if let value = object["signedTransactions"] {
                guard case .array(let list) = value else {
                    return .failure(MalformedInput("\"signedTransactions\" must be an array of JWS strings"))
                }
                var items: [InputItem] = []
                for (index, element) in list.enumerated() {
                    switch jws(element, "signedTransactions[\(index)]") {
                    case .success(let text): items.append(InputItem(jws: text, expected: .transaction))
                    case .failure(let error): return .failure(error)
                    }
                }
                return .success(items)
            }
            if let value = object["notificationHistory"] {
                // Get Notification History: notificationHistory[].signedPayload, each one notification.
                guard case .array(let entries) = value else {
                    return .failure(MalformedInput("\"notificationHistory\" must be an array of {\"signedPayload\": ...} items"))
                }
                var items: [InputItem] = []
                for (index, entry) in entries.enumerated() {
                    guard case .object(let fields) = entry, let payload = fields["signedPayload"] else {
                        return .failure(MalformedInput("notificationHistory[\(index)] has no signedPayload"))
                    }
                    if let conflict = signedFieldConflict(fields, path: "notificationHistory[\(index)].") { return .failure(conflict) }
                    switch jws(payload, "notificationHistory[\(index)].signedPayload") {
                    case .success(let text): items.append(InputItem(jws: text, expected: .notification))
                    case .failure(let error): return .failure(error)
                    }
                }
                return .success(items)
            }
            if let value = object["data"] {
                // Get All Subscription Statuses: data[].lastTransactions[].{signedTransactionInfo, signedRenewalInfo}
                guard case .array(let groups) = value else {
                    return .failure(MalformedInput("\"data\" must be an array of subscription groups"))
                }
                var items: [InputItem] = []
                for (g, group) in groups.enumerated() {
                    guard case .array(let last)? = group["lastTransactions"] else {
                        return .failure(MalformedInput("data[\(g)].lastTransactions must be an array"))
                    }
                    for (t, entry) in last.enumerated() {
                        if let value = entry["signedTransactionInfo"] {
                            switch jws(value, "data[\(g)].lastTransactions[\(t)].signedTransactionInfo") {
                            case .success(let text): items.append(InputItem(jws: text, expected: .transaction))
                            case .failure(let error): return .failure(error)
                            }
                        }
                        if let value = entry["signedRenewalInfo"] {
                            switch jws(value, "data[\(g)].lastTransactions[\(t)].signedRenewalInfo") {
                            case .success(let text): items.append(InputItem(jws: text, expected: .renewalInfo))
                            case .failure(let error): return .failure(error)
                            }
                        }
                    }
                }
                return .success(items)
            }
            return .failure(
                MalformedInput(
                    "object has none of signedPayload, signedTransactionInfo, signedRenewalInfo, signedAppTransactionInfo, signedTransactions, data, notificationHistory, receipt-data"))
        default:
            return .failure(MalformedInput("expected a JSON object or a JWS string, found \(json.typeName)"))
        }
    }
}

extension InputDocument {
    /// The fields of section 1 that hold signed data, each a form of its own.
    static let signedFields: [String] = [
        "signedPayload", "signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo", "signedTransactions",
        "data", "notificationHistory", "receipt-data",
    ]

    /// How a bare string is read: a legacy receipt when it is base64 alone (no dot, as
    /// every JWS has), else a JWS classified by its payload.
    static func bareKind(_ text: String) -> InputItem.Expected {
        var sawData = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                sawData = true
            case 0x20, 0x0A, 0x0D, 0x09: continue
            default: return .any
            }
        }
        return sawData ? .receipt : .any
    }

    /// Why a document that carries signed data the engine would not ingest is
    /// rejected whole (specification section 3: signed data is never dropped
    /// silently), or `nil`. A document holds one form of section 1; the only
    /// pair is `signedTransactionInfo` with its `signedRenewalInfo`. Any other
    /// field named `signed...` is signed data of a form the engine does not know.
    static func signedFieldConflict(_ object: JSONObject, path: String = "") -> MalformedInput? {
        let present = signedFields.filter { object[$0] != nil }
        let unknown = object.keys.filter { $0.hasPrefix("signed") && !signedFields.contains($0) }.sorted()
        if let field = unknown.first {
            return MalformedInput(
                "\(path)\(field) is signed data the engine does not ingest; the document is rejected whole so that nothing signed is dropped silently")
        }
        if present.count <= 1 || Set(present) == ["signedTransactionInfo", "signedRenewalInfo"] { return nil }
        let names = present.map { path + $0 }.joined(separator: " and ")
        return MalformedInput(
            "the document carries \(names): one document holds one input form of specification section 1 (only signedTransactionInfo may come with its signedRenewalInfo); it is rejected whole so that nothing signed is dropped silently")
    }
}

/// A document that is not a well-formed input of specification section 1.
public struct MalformedInput: Error, Sendable, Hashable {
    public var message: String
    /// The rejection's code: `MALFORMED_INPUT`, or `UNVERIFIABLE_V1` for a V1 notification.
    public var code: String
    public init(_ message: String, code: String = "MALFORMED_INPUT") {
        self.message = message
        self.code = code
    }
}
