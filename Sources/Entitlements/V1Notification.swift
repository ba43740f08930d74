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
        let id = originalTransactionId(object).map { " (original transaction id \($0): sync --customer \($0) brings its signed history)" } ?? ""
        return MalformedInput(
            "App Store Server Notification V1\(type) is not signed and cannot be verified; switch the app to V2 notifications\(id)",
            code: code)
    }

    /// The original transaction id a V1 notification names: `original_transaction_id`, or
    /// that of the first entry of `unified_receipt.latest_receipt_info` or
    /// `unified_receipt.pending_renewal_info`.
    public static func originalTransactionId(_ object: JSONObject) -> String? {
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let id)? where !id.isEmpty && id.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }): return id
            case .int(let id)? where id > 0: return String(id)
            default: return nil
            }
        }
        if let id = text(object["original_transaction_id"]) { return id }
        if case .object(let unified)? = object["unified_receipt"] {
            for list in ["latest_receipt_info", "pending_renewal_info"] {
                if case .array(let entries)? = unified[list] {
                    for entry in entries { if let id = text(entry["original_transaction_id"]) { return id } }
                }
            }
        }
        return nil
    }

    /// The original transaction id of a document that is a V1 notification, else `nil`.
    public static func originalTransactionId(document bytes: [UInt8]) -> String? {
        guard case .object(let object)? = try? JSONParser().parse(bytes), rejection(object) != nil else { return nil }
        return originalTransactionId(object)
    }
}
