import EntitlementCore
import Foundation

/// How App Store customers become the team's own users (specification section 13):
/// `"appUsers": {"fromAppAccountToken": true, "transfer": "transfer" | "keep"}`.
public struct AppUsersConfiguration: Sendable, Hashable {
    /// What a second link of a customer to another app user does.
    public enum TransferPolicy: String, Sendable, Hashable, CaseIterable {
        /// The customer moves to the newer app user (lifecycle `TRANSFER`).
        case transfer
        /// The second link is refused (`LINK_CONFLICT`).
        case keep
    }

    /// Whether an `appAccountToken` in signed data links its customer to the app user
    /// of the same (lowercase) UUID, where no operator's link says otherwise.
    public var fromAppAccountToken: Bool
    public var transfer: TransferPolicy

    public init(fromAppAccountToken: Bool = false, transfer: TransferPolicy = .transfer) {
        self.fromAppAccountToken = fromAppAccountToken
        self.transfer = transfer
    }

    /// The app user `state`'s customer belongs to: the operator's latest link, else
    /// (with ``fromAppAccountToken``) its `appAccountToken`, lowercased.
    public func appUser(of state: CustomerState) -> String? {
        if let linked = state.linkedAppUser?.appUserId { return linked }
        return fromAppAccountToken ? state.accountToken?.token.lowercased() : nil
    }

    /// Reads the `appUsers` section.
    /// - Throws: ``ConfigurationError`` naming the field.
    static func parse(_ json: JSONValue) throws(ConfigurationError) -> AppUsersConfiguration {
        guard case .object(let object) = json else {
            throw ConfigurationError(
                field: "appUsers", message: "expected an object such as {\"fromAppAccountToken\": true, \"transfer\": \"transfer\"}, found \(json.typeName)")
        }
        for key in object.keys.sorted() where key != "fromAppAccountToken" && key != "transfer" {
            throw ConfigurationError(field: "appUsers.\(key)", message: "unknown field; expected fromAppAccountToken, transfer")
        }
        var section = AppUsersConfiguration()
        switch object["fromAppAccountToken"] {
        case nil, .null?: break
        case .bool(let flag)?: section.fromAppAccountToken = flag
        case let other?:
            throw ConfigurationError(field: "appUsers.fromAppAccountToken", message: "expected true or false, found \(JSONWriter.string(other).prefix(40))")
        }
        switch object["transfer"] {
        case nil, .null?: break
        case .string(let name)?:
            guard let policy = TransferPolicy(rawValue: name) else {
                throw ConfigurationError(field: "appUsers.transfer", message: "expected \"transfer\" or \"keep\", found \"\(name.prefix(40))\"")
            }
            section.transfer = policy
        case let other?:
            throw ConfigurationError(field: "appUsers.transfer", message: "expected \"transfer\" or \"keep\", found \(JSONWriter.string(other).prefix(40))")
        }
        return section
    }
}
