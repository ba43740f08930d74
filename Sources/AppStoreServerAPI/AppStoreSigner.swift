import JSONAndBase64

/// Makes what the App Store asks a server to sign with its In-App Purchase key: the App
/// Store Server API's bearer token, promotional offer and introductory-offer eligibility
/// signatures (JWS), and the original promotional offer signature (V1).
///
/// Output is byte-compatible with Apple's App Store Server Library for Python: header
/// `{"alg":"ES256","kid":<keyId>,"typ":"JWT"}`, claims as compact JSON in that library's
/// order, base64url without padding, raw `r || s` ES256 signatures. Time and nonces come
/// in as values, so the output is a pure function of its inputs and the key.
///
/// ```swift
/// let signer = AppStoreSigner(key: try SigningKey(path: p8), keyId: "2X9R4HXF34",
///                             issuerId: "57246542-...", bundleId: "com.example.app")
/// let token = signer.apiToken(issuedAt: 1_763_683_200)
/// ```
public struct AppStoreSigner: Sendable {
    public let key: SigningKey
    public let keyId: String
    public let issuerId: String
    public let bundleId: String

    /// The audience of the App Store Server API's bearer tokens.
    public static let apiAudience = "appstoreconnect-v1"
    /// How long a bearer token is valid, in seconds (Apple accepts at most 60 minutes; its libraries use 5).
    public static let apiTokenLifetime: Int64 = 300

    public init(key: SigningKey, keyId: String, issuerId: String, bundleId: String) {
        self.key = key
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
    }

    /// The JWS header every App Store signed request carries.
    var headerJSON: String {
        JSONWriter.asciiString(["alg": "ES256", "kid": .string(keyId), "typ": "JWT"])
    }

    /// A bearer token for the App Store Server API: claims `iss`, `iat`, `exp` (`iat` + 300),
    /// `aud` `appstoreconnect-v1`, `bid`.
    /// - Parameter issuedAt: now, in seconds since 1970.
    public func apiToken(issuedAt: Int64) -> String {
        jws([
            ("iss", .string(issuerId)),
            ("iat", .int(issuedAt)),
            ("exp", .int(issuedAt + Self.apiTokenLifetime)),
            ("aud", .string(Self.apiAudience)),
            ("bid", .string(bundleId)),
        ])
    }

    /// A promotional offer signature (the JWS format StoreKit's `promotionalOffer(_:compactJWS:)`
    /// takes): claims `productId`, `offerIdentifier`, `transactionId` when given, then `bid`,
    /// `iss`, `aud` `promotional-offer`, `iat`, `nonce`; no `exp`.
    /// - Parameters:
    ///   - nonce: a fresh UUID, lowercase.
    ///   - issuedAt: now, in seconds since 1970.
    public func promotionalOffer(
        productId: String, offerIdentifier: String, transactionId: String?, nonce: String, issuedAt: Int64
    ) -> String {
        var claims: [(key: String, value: JSONValue)] = [("productId", .string(productId)), ("offerIdentifier", .string(offerIdentifier))]
        if let transactionId { claims.append(("transactionId", .string(transactionId))) }
        return jws(claims + commonClaims(audience: "promotional-offer", nonce: nonce, issuedAt: issuedAt))
    }

    /// An introductory offer eligibility signature: claims `productId`,
    /// `allowIntroductoryOffer`, `transactionId`, then `bid`, `iss`, `aud`
    /// `introductory-offer-eligibility`, `iat`, `nonce`; no `exp`.
    public func introductoryOfferEligibility(
        productId: String, allowIntroductoryOffer: Bool, transactionId: String, nonce: String, issuedAt: Int64
    ) -> String {
        jws(
            [
                ("productId", .string(productId)), ("allowIntroductoryOffer", .bool(allowIntroductoryOffer)),
                ("transactionId", .string(transactionId)),
            ] + commonClaims(audience: "introductory-offer-eligibility", nonce: nonce, issuedAt: issuedAt))
    }

    /// The original (V1) promotional offer signature: base64 (standard, padded) of the DER
    /// ECDSA P-256 SHA-256 signature over `bundleId`, `keyId`, `productId`, `offerId`,
    /// lowercase `appAccountToken`, lowercase `nonce` and `timestamp` (ms), joined by U+2063.
    public func promotionalOfferV1(
        productId: String, offerId: String, appAccountToken: String, nonce: String, timestamp: Int64
    ) -> PromotionalOfferV1Signature {
        let nonce = nonce.lowercased()
        let message = Self.promotionalOfferV1Message(
            bundleId: bundleId, keyId: keyId, productId: productId, offerId: offerId, appAccountToken: appAccountToken,
            nonce: nonce, timestamp: timestamp)
        let signature = Base64.encodeStandardPadded(key.signDER(Array(message.utf8)))
        return PromotionalOfferV1Signature(keyId: keyId, nonce: nonce, timestamp: timestamp, signature: signature)
    }

    /// The text the V1 signature covers (UTF-8), as Apple specifies it.
    public static func promotionalOfferV1Message(
        bundleId: String, keyId: String, productId: String, offerId: String, appAccountToken: String, nonce: String,
        timestamp: Int64
    ) -> String {
        [bundleId, keyId, productId, offerId, appAccountToken.lowercased(), nonce.lowercased(), String(timestamp)]
            .joined(separator: String(fieldSeparator))
    }

    /// U+2063 INVISIBLE SEPARATOR, which joins the fields of the V1 signature: a field that
    /// contains it makes the signed text ambiguous, so callers refuse such fields.
    public static let fieldSeparator: Unicode.Scalar = "\u{2063}"

    private func commonClaims(audience: String, nonce: String, issuedAt: Int64) -> [(key: String, value: JSONValue)] {
        [("bid", .string(bundleId)), ("iss", .string(issuerId)), ("aud", .string(audience)), ("iat", .int(issuedAt)), ("nonce", .string(nonce))]
    }

    private func jws(_ claims: [(key: String, value: JSONValue)]) -> String {
        let signingInput = Base64.encodeURL(Array(headerJSON.utf8)) + "." + Base64.encodeURL(Array(JSONWriter.asciiString(.object(JSONObject(claims))).utf8))
        return signingInput + "." + Base64.encodeURL(key.signES256(Array(signingInput.utf8)))
    }
}

/// The original promotional offer signature and the values StoreKit needs beside it.
public struct PromotionalOfferV1Signature: Sendable, Equatable {
    public var keyId: String
    public var nonce: String
    public var timestamp: Int64
    /// Base64 of the DER ECDSA signature.
    public var signature: String
}
