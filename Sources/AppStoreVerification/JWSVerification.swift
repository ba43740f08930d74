internal import EntitlementCore

/// A JWS whose signature and chain verified (or, in Xcode/LocalTesting, that parsed), with
/// the kind its payload is and the payload itself, not yet decoded as that kind.
struct OpenedJWS {
    let kind: SignedKind
    let payload: JSONValue
    /// The payload's bytes as signed.
    let bytes: SignedBytes
}

extension SignedDataVerifier {
    /// Steps 1 to 4 of the verification (see ``SignedDataVerifier``).
    /// - Parameter kind: the kind the caller expects, or `nil` to classify the payload.
    /// - Parameter deferred: where a signature check with a key's table may be put off to.
    func open(_ jws: String, as kind: SignedKind?, deferring deferred: DeferredSignatures? = nil) throws(VerificationError) -> OpenedJWS {
        var text = jws
        let result = text.withUTF8 { bytes in
            Result { () throws(VerificationError) -> OpenedJWS in try open(bytes, as: kind, deferring: deferred) }
        }
        return try result.get()
    }

    private func open(
        _ bytes: UnsafeBufferPointer<UInt8>, as expected: SignedKind?, deferring deferred: DeferredSignatures?
    ) throws(VerificationError) -> OpenedJWS {
        let jws = try CompactJWS(bytes)
        guard let trust else {
            // Xcode / LocalTesting: not signed by Apple; parse only.
            _ = try jws.decodedHeader()
            let decoded = try Self.decodePayload(jws.payload, as: expected)
            return OpenedJWS(kind: decoded.kind, payload: decoded.payload, bytes: SignedBytes(decoded.bytes))
        }

        // 1. Header: from the cache when this exact header verified before, else parsed now.
        let cached = cache.lookup(header: jws.header)
        var presented: PresentedChain? = nil
        let key: P256PublicKey
        if let cached {
            key = cached.chain.key
        } else {
            let chain = try PresentedChain(header: jws.decodedHeader(), knownRoots: trust.rootsDER)
            guard let leafKey = chain.leaf.p256PublicKey() else {
                throw .verificationFailure("the leaf certificate's key is not an EC P-256 key, which ES256 requires")
            }
            presented = chain
            key = leafKey
        }

        // 2. Signature, with the presented leaf's key: altered content is always
        //    VERIFICATION_FAILURE, even where the change moved signedDate out of the chain's validity.
        guard let signature = jws.decodedSignature() else {
            throw .verificationFailure("the JWS signature is not 64 bytes of base64url (ES256 r || s)")
        }
        // The SHA-256 of the whole JWS comes almost free on the way to the signing input's:
        // the state after `header.payload`, continued with `.` and the signature. The log's
        // hash chain takes it (``SignedBytes/jwsDigest``).
        var jwsDigest = [UInt8](repeating: 0, count: 32)
        let valid = signature.withUnsafeBufferPointer { signature in
            jwsDigest.withUnsafeMutableBufferPointer { whole in
                key.verifyES256(signature: signature, deferring: deferred) { signingDigest in
                    Self.dot.withUnsafeBufferPointer { dot in
                        if let cached {
                            // The header's part of the signing input was hashed when its chain was cached.
                            cached.signingPrefix.digest(
                                continuing: jws.payload, into: signingDigest, extendedBy: dot, jws.signature, into: whole.baseAddress!)
                        } else {
                            SHA256.Prefix(jws.signingInput).digest(
                                continuing: UnsafeBufferPointer(start: nil, count: 0), into: signingDigest, extendedBy: dot, jws.signature,
                                into: whole.baseAddress!)
                        }
                    }
                }
            }
        }
        guard valid else {
            throw .verificationFailure("the JWS signature does not verify with the leaf certificate's public key")
        }

        // 3. Payload, far enough to know its kind and signing time.
        let decoded = try Self.decodePayload(jws.payload, as: expected)

        // 4. Chain, valid at the signing time.
        if cached == nil || !cached!.chain.isValid(atMillis: decoded.date) {
            let chain: PresentedChain
            if let presented { chain = presented } else { chain = try PresentedChain(header: jws.decodedHeader(), knownRoots: trust.rootsDER) }
            let verified = try trust.verify(
                chain, atMillis: decoded.date, dateField: decoded.dateField, keyTableAfter: configuration.keyTableAfter)
            cache.insert(header: jws.header, chain: verified)
        }
        return OpenedJWS(kind: decoded.kind, payload: decoded.payload, bytes: SignedBytes(decoded.bytes, jwsDigest: jwsDigest))
    }

    private static let dot: [UInt8] = [UInt8(ascii: ".")]

    struct DecodedPayload {
        let kind: SignedKind
        let payload: JSONValue
        let date: Int64
        let dateField: String
        let bytes: [UInt8]
    }

    /// Decodes the payload segment to JSON, finds its kind and reads its signing time.
    static func decodePayload(_ segment: UnsafeBufferPointer<UInt8>, as expected: SignedKind?) throws(VerificationError) -> DecodedPayload {
        guard let bytes = Base64.decodeURL(segment) else {
            throw .malformed("the JWS payload is not base64url (unpadded, no whitespace)")
        }
        let payload: JSONValue
        do {
            payload = try JSONParser().parse(bytes)
        } catch {
            throw .malformed("the JWS payload is not JSON: \(error)")
        }
        guard case .object(let object) = payload else {
            throw .malformed("the JWS payload is a JSON \(payload.typeName), not an object")
        }
        guard let kind = expected ?? classify(object) else {
            throw .malformed(
                "the payload is not a notification, transaction, renewal info or AppTransaction: it has none of notificationType, receiptType, transactionId, originalTransactionId")
        }
        // A payload that names itself another kind (a transaction, with its transactionId,
        // where renewal info is expected) is not taken as the kind its place names: it would
        // enter the log as what it is not.
        if let expected, let actual = classify(object), actual != expected, identifyingRank(actual) < identifyingRank(expected) {
            throw .malformed(
                "\(kindName(expected)) payload: it has \(identifyingField(actual)), so it is a \(kindName(actual)), not \(kindName(expected))")
        }
        let dateField = kind == .appTransaction ? "receiptCreationDate" : "signedDate"
        do {
            let date = try FieldReader(payload).requiredDate(dateField)
            return DecodedPayload(kind: kind, payload: payload, date: date, dateField: dateField, bytes: bytes)
        } catch {
            throw .malformed("\(kindName(kind)) payload: \(error)")
        }
    }

    /// The kind of a payload, told by which of Apple's identifying fields it has.
    static func classify(_ object: JSONObject) -> SignedKind? {
        func has(_ key: String) -> Bool {
            if let value = object[key], value != .null { return true }
            return false
        }
        if has("notificationType") { return .notification }
        if has("receiptType") { return .appTransaction }
        if has("transactionId") { return .transaction }
        if has("originalTransactionId") { return .renewalInfo }
        return nil
    }

    /// The field that tells `kind` apart, in the order ``classify(_:)`` asks for them.
    static func identifyingField(_ kind: SignedKind) -> String {
        switch kind {
        case .notification: return "notificationType"
        case .appTransaction: return "receiptType"
        case .transaction: return "transactionId"
        case .renewalInfo: return "originalTransactionId"
        case .receipt: return "receipt"
        }
    }

    /// Where `kind` comes in the order of ``classify(_:)``.
    static func identifyingRank(_ kind: SignedKind) -> Int {
        switch kind {
        case .notification: return 0
        case .appTransaction: return 1
        case .transaction: return 2
        case .renewalInfo: return 3
        case .receipt: return 4
        }
    }

    static func kindName(_ kind: SignedKind) -> String {
        switch kind {
        case .notification: return "notification"
        case .transaction: return "transaction"
        case .renewalInfo: return "renewal info"
        case .appTransaction: return "AppTransaction"
        case .receipt: return "app receipt"
        }
    }
}
