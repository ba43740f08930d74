import EntitlementCore

/// Signed data a document carries where the engine does not read it.
///
/// Signed data is never dropped silently (specification section 3): a document
/// holding a JWS or a legacy app receipt anywhere but at the positions the forms of
/// section 1 ingest is rejected whole, `MALFORMED_INPUT`, naming where it sits — a
/// top-level member beside a history page, a `signedFoo` beside a subscription
/// status's transaction, a JWS inside `sendAttempts`, a receipt beside
/// `receipt-data` or beside a transaction, or either inside any object or array
/// nobody reads.
///
/// The search walks the document already parsed and tests only the strings it meets
/// outside the ingested positions, each with ``JWSShape/matches(_:)`` and
/// ``ReceiptShape/matches(_:)``.
enum StraySignedData {
    /// Where in a document the engine ingests signed data.
    indirect enum Positions: Sendable {
        /// The value here is one of the document's items.
        case ingested
        /// An object whose members named here lead to ingested positions; the others hold none.
        case object([String: Positions])
        /// An array whose every element is at these positions.
        case array(Positions)
    }

    /// The ingested positions of every form of section 1 (a bare JWS aside), together.
    ///
    /// Only one form's members may appear in a document (``InputDocument/signedFieldConflict(_:path:)``
    /// rejects any other mix), so for a document that passed that check these are exactly
    /// its own form's positions. Apple's other members — `revision`, `hasMore`,
    /// `bundleId`, `appAppleId`, `environment`, `paginationToken`,
    /// `subscriptionGroupIdentifier`, `status`, `originalTransactionId`, `sendAttempts` —
    /// carry no JWS, and are searched like any unknown member.
    static let ingested: Positions = .object([
        "signedPayload": .ingested,
        "signedTransactionInfo": .ingested,
        "signedRenewalInfo": .ingested,
        "signedAppTransactionInfo": .ingested,
        "receipt-data": .ingested,
        "signedTransactions": .array(.ingested),
        "notificationHistory": .array(.object(["signedPayload": .ingested])),
        "data": .array(
            .object([
                "lastTransactions": .array(.object(["signedTransactionInfo": .ingested, "signedRenewalInfo": .ingested]))
            ])),
    ])

    /// The rejection of `object`, a document's root, when it holds a JWS or a receipt
    /// the engine would not ingest, else `nil`.
    static func rejection(_ object: JSONObject) -> MalformedInput? {
        guard let path = firstPath(in: .object(object), at: ingested) else { return nil }
        if case .string(let text)? = path.value(in: .object(object)), !JWSShape.matches(text) {
            return MalformedInput(
                "\(path) holds signed data (an app receipt) the engine does not ingest; the document is rejected whole so that nothing signed is dropped silently: send that receipt in a document of its own, {\"receipt-data\": \"<base64>\"}")
        }
        return MalformedInput(
            "\(path) holds signed data (a JWS) the engine does not ingest; the document is rejected whole so that nothing signed is dropped silently: send that JWS in a document of its own, one of the input forms of specification section 1")
    }

    /// Where the first JWS or receipt outside the ingested positions sits in `value`, in document order.
    static func firstPath(in value: JSONValue, at positions: Positions?) -> JSONPath? {
        strayPath(value, positions).map { JSONPath(components: $0.reversed()) }
    }

    /// The path to the first stray JWS or receipt in `value`, innermost step first (built
    /// only once one is found); `positions` is `nil` where nothing below is ingested.
    private static func strayPath(_ value: JSONValue, _ positions: Positions?) -> [JSONPath.Component]? {
        switch value {
        case .string(let text):
            if case .ingested? = positions { return nil }
            return JWSShape.matches(text) || ReceiptShape.matches(text) ? [] : nil
        case .array(let elements):
            let inner: Positions? = if case .array(let each)? = positions { each } else { nil }
            for (index, element) in elements.enumerated() {
                if var path = strayPath(element, inner) {
                    path.append(.index(index))
                    return path
                }
            }
            return nil
        case .object(let object):
            let members: [String: Positions]? = if case .object(let named)? = positions { named } else { nil }
            for member in object.members {
                if var path = strayPath(member.value, members?[member.key]) {
                    path.append(.key(member.key))
                    return path
                }
            }
            return nil
        case .null, .bool, .int, .double:
            return nil
        }
    }
}
