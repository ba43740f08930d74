import EntitlementCore

/// App Store Server Notifications V1 (`notification_type`, `unified_receipt`): not
/// signed, so never evidence (specification section 16). They are rejected
/// `UNVERIFIABLE_V1` and quarantined; the original transaction id they name is a hint
/// for `sync --customer`, which brings the signed truth.
public enum V1Notification {
    /// The code of a V1 notification's rejection.
    public static let code = "UNVERIFIABLE_V1"

    /// The rejection of `object` when it is a V1 notification, else `nil`.
    static func rejection(_ object: JSONObject) -> MalformedInput? {
        guard object["notification_type"] != nil || object["unified_receipt"] != nil else { return nil }
        let type: String
        if case .string(let name)? = object["notification_type"] { type = " " + name } else { type = "" }
        let ids = originalTransactionIds(object)
        let id =
            ids.isEmpty
            ? ""
            : " (original transaction id\(ids.count == 1 ? "" : "s") \(ids.joined(separator: ", ")): sync --customer brings \(ids.count == 1 ? "its" : "their") signed history)"
        return MalformedInput(
            "App Store Server Notification V1\(type) is not signed and cannot be verified; switch the app to V2 notifications\(id)",
            code: code)
    }

    /// The original transaction ids a V1 notification names, each once, in the order
    /// found: `original_transaction_id`, then those of the entries of
    /// `unified_receipt.latest_receipt_info` and `unified_receipt.pending_renewal_info`,
    /// then of the older top-level `latest_receipt_info` and
    /// `latest_expired_receipt_info` (an object each).
    public static func originalTransactionIds(_ object: JSONObject) -> [String] {
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let id)? where !id.isEmpty && id.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }): return id
            case .int(let id)? where id > 0: return String(id)
            default: return nil
            }
        }
        var ids: [String] = []
        func note(_ value: JSONValue?) { if let id = text(value), !ids.contains(id) { ids.append(id) } }
        func entries(_ value: JSONValue?) {
            switch value {
            case .array(let list)?: for entry in list { note(entry["original_transaction_id"]) }
            case .object(let entry)?: note(entry["original_transaction_id"])
            default: break
            }
        }
        note(object["original_transaction_id"])
        if case .object(let unified)? = object["unified_receipt"] {
            entries(unified["latest_receipt_info"])
            entries(unified["pending_renewal_info"])
        }
        entries(object["latest_receipt_info"])
        entries(object["latest_expired_receipt_info"])
        return ids
    }

    /// The original transaction ids of a document that is a V1 notification (none for another document).
    public static func originalTransactionIds(document bytes: [UInt8]) -> [String] {
        guard case .object(let object)? = try? JSONParser().parse(bytes), rejection(object) != nil else { return [] }
        return originalTransactionIds(object)
    }
}
