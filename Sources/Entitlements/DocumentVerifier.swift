import AppStoreVerification
import EntitlementCore
internal import EventStore

/// Verification of input documents, without storage: splits a document into
/// its signed items and verifies each. Thread-safe.
public struct DocumentVerifier: Sendable {
    public let configuration: EngineConfiguration
    public let verifier: SignedDataVerifier
    /// The verifier of legacy app receipts (specification section 16).
    public let receiptVerifier: ReceiptVerifier

    public init(configuration: EngineConfiguration) throws(EngineError) {
        self.configuration = configuration
        do {
            receiptVerifier = try ReceiptVerifier(
                bundleId: configuration.bundleId, environments: configuration.environments,
                trustedRootsDER: configuration.receiptRootCertificatesDER ?? [AppleRootCertificate.incRootDER])
            verifier = try SignedDataVerifier(
                configuration: VerifierConfiguration(
                    bundleId: configuration.bundleId, appAppleId: configuration.appAppleId,
                    environment: configuration.environment, environments: configuration.environments,
                    trustedRootsDER: configuration.rootCertificatesDER ?? [AppleRootCertificate.g3DER],
                    keyTableAfter: configuration.keyTableAfter))
        } catch {
            throw EngineError(code: EngineError.Code(rawValue: error.code.rawValue), message: error.message)
        }
    }

    /// Verifies one input item (a JWS of the expected kind); a notification's signatures are
    /// checked together (``SignedDataVerifier/verifyNotification(_:)``).
    public func verify(_ item: InputItem) -> Result<VerifiedInput, VerificationError> {
        do {
            switch item.expected {
            case .notification: return .success(.notification(try verifier.verifyNotification(item.jws)))
            case .any: return .success(try verifier.verify(item.jws))
            case .transaction, .renewalInfo, .appTransaction, .receipt: return verify(item, deferring: nil)
            }
        } catch {
            return .failure(error)
        }
    }

    /// The same, with signature checks put off to `deferred` (see ``DeferredSignatures``);
    /// `nil` checks each at once.
    func verify(_ item: InputItem, deferring deferred: DeferredSignatures?) -> Result<VerifiedInput, VerificationError> {
        do {
            switch item.expected {
            case .notification: return .success(.notification(try verifier.verifyNotification(item.jws, deferring: deferred)))
            case .transaction: return .success(.transaction(try verifier.verifyTransaction(item.jws, deferring: deferred)))
            case .renewalInfo: return .success(.renewalInfo(try verifier.verifyRenewalInfo(item.jws, deferring: deferred)))
            case .appTransaction: return .success(.appTransaction(try verifier.verifyAppTransaction(item.jws, deferring: deferred)))
            case .receipt: return .success(.receipt(try receiptVerifier.verify(base64: item.jws).parts[0]))
            case .any: return .success(try verifier.verify(item.jws, deferring: deferred))
            }
        } catch {
            return .failure(error)
        }
    }

    /// The items of one input document, each verified or with the reason it
    /// is not, and the raw bytes to quarantine for each rejection.
    public func verifiedItems(_ document: InputBytes) -> [AppendItem] {
        var items: [AppendItem] = []
        appendVerifiedItems(document, to: &items)
        return items
    }

    /// The same, appended to `items` (a batch's items are built in one array, not
    /// copied from one array per document); returns how many were appended. The document's
    /// signatures are checked together (a notification's three: one modular inversion), and
    /// it is verified again checking each at once when one fails, as a batch is.
    @discardableResult
    public func appendVerifiedItems(_ document: InputBytes, to items: inout [AppendItem]) -> Int {
        let batch = verifiedTogether([document])
        items += batch.items
        return batch.counts[0]
    }

    /// The same, with signature checks put off to `deferred`: an item reported verified
    /// is verified only once `deferred.check()` passed the checks recorded for it.
    @discardableResult
    func appendVerifiedItems(_ document: InputBytes, to items: inout [AppendItem], deferring deferred: DeferredSignatures?) -> Int {
        if document.size > configuration.maxInputBytes {
            items.append(
                .rejected(
                    Rejection(
                        code: "MALFORMED_INPUT",
                        message:
                            "input of \(document.sizeIsLowerBound ? "at least " : "")\(document.size) bytes\(document.sizeIsLowerBound ? " (not read to its end)" : "") exceeds the limit of \(configuration.maxInputBytes) bytes (configuration field maxInputBytes)",
                        raw: Array(document.bytes.prefix(configuration.maxInputBytes)), size: document.size)))
            return 1
        }
        // Apple's notification body, `{"signedPayload":"<JWS>"}`: the JWS is handed to the
        // verifier as the bytes between the quotes, without first reading all 5-20 KB of
        // them for escapes. A verifier that checks signatures accepts base64url and dots
        // alone, which need no escaping: the strict reading would have given the same JWS.
        // When the verifier refuses it, or checks no signatures, the bytes are read: plain,
        // the JWS was the document's; otherwise the strict path below reads and judges it.
        if let inner = InputDocument.notificationBodyString(InputDocument.trimmed(document.bytes[...])) {
            let item = InputItem(jws: String(decoding: inner, as: UTF8.self), expected: .notification)
            let result = verify(item, deferring: deferred)
            let accepted: Bool
            if case .success = result { accepted = verifier.checksSignatures } else { accepted = false }
            if accepted || inner.withUnsafeBufferPointer(JSONParser.isPlainStringContent) {
                items.append(appendItem(result, of: item))
                return 1
            }
        }
        switch InputDocument.items(document.bytes[...]) {
        case .failure(let malformed):
            items.append(.rejected(Rejection(code: malformed.code, message: malformed.message, raw: document.bytes, size: document.size)))
            return 1
        case .success(let found):
            var count = 0
            for item in found {
                if item.expected == .receipt {
                    // A receipt is one event per original transaction id it holds (each a customer's).
                    count += appendReceipt(item, to: &items)
                } else {
                    items.append(appendItem(verify(item, deferring: deferred), of: item))
                    count += 1
                }
            }
            return count
        }
    }

    /// Apple's notification webhook body alone, verified as ``appendVerifiedItems(_:to:)``
    /// verifies it (its fast path for Apple's own body included); a well-formed document
    /// holding anything but one notification is rejected `MALFORMED_INPUT` with `otherwise`.
    public func verifiedNotification(_ document: InputBytes, otherwise message: String) -> AppendItem {
        if InputDocument.notificationBodyString(InputDocument.trimmed(document.bytes[...])) != nil {
            // `{"signedPayload":"<JWS>"}`: one notification item, whichever path reads it.
            var items: [AppendItem] = []
            appendVerifiedItems(document, to: &items)
            return items[0]
        }
        switch InputDocument.items(document.bytes[...]) {
        case .failure(let malformed):
            return .rejected(Rejection(code: malformed.code, message: malformed.message, raw: document.bytes, size: document.size))
        case .success(let found) where found.count == 1 && found[0].expected == .notification:
            return appendItem(verify(found[0], deferring: nil), of: found[0])
        case .success:
            return .rejected(Rejection(code: "MALFORMED_INPUT", message: message, raw: document.bytes, size: document.size))
        }
    }

    /// A receipt's parts, verified, appended to `items`; returns how many.
    func appendReceipt(_ item: InputItem, to items: inout [AppendItem]) -> Int {
        do {
            let parts = try receiptVerifier.verify(base64: item.jws).parts
            for part in parts { items.append(.verified(.receipt(part))) }
            return parts.count
        } catch {
            items.append(.rejected(rejection(error, raw: Array(item.jws.utf8))))
            return 1
        }
    }

    /// What is appended for `item` once verified: the input, or its rejection with the JWS as raw bytes.
    func appendItem(_ result: Result<VerifiedInput, VerificationError>, of item: InputItem) -> AppendItem {
        switch result {
        case .success(let input): return .verified(input)
        case .failure(let error): return .rejected(rejection(error, raw: Array(item.jws.utf8)))
        }
    }

    /// The rejection for `error`, marked signed by Apple when the verifier checks signatures
    /// and the error is one of the last step's (the app or the environment): every check of the
    /// signatures and the chain ran before it, and passed.
    func rejection(_ error: VerificationError, raw: [UInt8]) -> Rejection {
        let lastStep = error.code == .invalidAppIdentifier || error.code == .invalidEnvironment
        return Rejection(
            code: error.code.rawValue, message: error.message, raw: raw, isSignedByApple: lastStep && verifier.checksSignatures)
    }

    /// One JSON line per item: the decoded payload (nested JWS decoded in place) or the error.
    public func verify(_ document: InputBytes) -> [JSONValue] {
        var printed = Set<String>()
        var lines: [JSONValue] = verifiedItems(document).compactMap { item in
            // A receipt of several parts is printed once.
            if case .verified(.receipt(let part)) = item, !printed.insert(part.receipt.sha256).inserted { return nil }
            switch item {
            case .verified(let input):
                return ["result": "verified", "kind": .string(input.kind.rawValue), "payload": input.decodedJSON]
            case .rejected(let rejection):
                return ["result": "rejected", "error": ["code": .string(rejection.code), "message": .string(rejection.message)]]
            }
        }
        // As `ingest` prints them: a document holding no item is one line, and every
        // line names the document it came from.
        if lines.isEmpty { lines = [["result": "empty"]] }
        guard let number = document.number else { return lines }
        return lines.map { line in
            guard case .object(let object) = line else { return line }
            return .object(JSONObject([(key: "input", value: .int(Int64(number)))] + object.members))
        }
    }
}
