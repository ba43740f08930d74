import AppStoreVerification
import EntitlementCore

extension Engine {
    /// The payload of a verified input, with a notification's nested JWS
    /// replaced by their decoded payloads.
    public static func decodedJSON(_ input: VerifiedInput) -> JSONValue { input.decodedJSON }
}
