import EntitlementCore
import Entitlements
import Foundation

/// `entitlements sign`: what the App Store expects a server to sign (specification section 10).
enum SignCommand {
    static let help = """
        entitlements sign --config PATH (api-token | promotional-offer ... | intro-offer-eligibility ... | promotional-offer-v1 ...)

        Signs with the In-App Purchase key of the configuration's appStoreServerAPI section
        (issuerId, keyId, privateKeyPath) and prints the result on one line.

        FORMS
          api-token
              A bearer token for the App Store Server API (valid 5 minutes): header
              {"alg":"ES256","kid":keyId,"typ":"JWT"}, claims iss, iat, exp, aud "appstoreconnect-v1", bid.
          promotional-offer --product P --offer O [--transaction-id T]
              A promotional offer signature (JWS) for StoreKit: claims productId, offerIdentifier,
              transactionId (when given; any transaction id of the customer, or its appTransactionId),
              bid, iss, aud "promotional-offer", iat, nonce (a fresh lowercase UUID).
          intro-offer-eligibility --product P --allow true|false --transaction-id T
              An introductory offer eligibility signature (JWS): claims productId,
              allowIntroductoryOffer, transactionId, bid, iss, aud "introductory-offer-eligibility", iat, nonce.
          promotional-offer-v1 --product P --offer O --app-account-token U [--nonce N] [--timestamp MS]
              The original promotional offer signature, printed as JSON
              {"keyId","nonce","timestamp","signature"}: base64 DER ECDSA P-256 SHA-256 over bundleId,
              keyId, productId, offerId, lowercase appAccountToken, lowercase nonce and timestamp,
              joined by U+2063. The nonce defaults to a fresh UUID, the timestamp (milliseconds or ISO
              8601 UTC) to now.

        OPTIONS
          --config PATH   configuration file with an appStoreServerAPI section (required)

        EXIT CODES
          0 signed; 2 usage, configuration or key error (KEY_NOT_FOUND, KEY_UNREADABLE,
          KEY_ENCRYPTED, KEY_WRONG_TYPE, KEY_INVALID)
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let forms: [String: (valued: Set<String>, required: [String])] = [
            "api-token": ([], []),
            "promotional-offer": (["--product", "--offer", "--transaction-id"], ["--product", "--offer"]),
            "intro-offer-eligibility": (["--product", "--allow", "--transaction-id"], ["--product", "--allow", "--transaction-id"]),
            "promotional-offer-v1": (
                ["--product", "--offer", "--app-account-token", "--nonce", "--timestamp"], ["--product", "--offer", "--app-account-token"]
            ),
        ]
        let formNames = forms.keys.sorted().joined(separator: ", ")
        guard let form = args.first(where: { forms[$0] != nil }) else {
            throw UsageError(message: "say what to sign: one of \(formNames)", command: "sign")
        }
        let spec = forms[form]!
        var rest = args
        rest.remove(at: rest.firstIndex(of: form)!)
        let arguments = try Arguments(rest, command: "sign", valued: spec.valued.union(["--config"]), switches: [])
        if let extra = arguments.positional.first {
            throw UsageError(message: "unexpected argument \"\(extra)\" (sign takes one form: \(formNames))", command: "sign")
        }
        for name in spec.required where arguments.values[name] == nil {
            throw UsageError(message: "\(form) needs \(name)", command: "sign")
        }
        for (name, value) in arguments.values where name != "--config" && name != "--app-account-token" && value.isEmpty {
            throw UsageError(message: "\(name) needs a non-empty value", command: "sign")
        }
        // U+2063 joins the V1 signature's fields: one inside a field would let a signature
        // vouch for other values too (product "a\u{2063}b", offer "c" = product "a", offer "b\u{2063}c").
        for (name, value) in arguments.values.sorted(by: { $0.key < $1.key }) where name != "--config" {
            if value.unicodeScalars.contains(AppStoreSigner.fieldSeparator) {
                throw UsageError(message: "\(name) contains U+2063 (INVISIBLE SEPARATOR), the separator of signed fields: remove it", command: "sign")
            }
        }
        guard let signer = try loadSigner(arguments, command: "sign") else { return .usage }
        for (field, value) in [("bundleId", signer.bundleId), ("appStoreServerAPI.keyId", signer.keyId), ("appStoreServerAPI.issuerId", signer.issuerId)]
        where value.unicodeScalars.contains(AppStoreSigner.fieldSeparator) {
            Output.error("entitlements sign: configuration field \"\(field)\": contains U+2063 (INVISIBLE SEPARATOR), the separator of signed fields: remove it")
            return .usage
        }
        let values = arguments.values
        let now = Engine.now()
        switch form {
        case "api-token":
            Output.write(signer.apiToken(issuedAt: now / 1000) + "\n", to: 1)
        case "promotional-offer":
            let jws = signer.promotionalOffer(
                productId: values["--product"]!, offerIdentifier: values["--offer"]!, transactionId: values["--transaction-id"],
                nonce: UUID().uuidString.lowercased(), issuedAt: now / 1000)
            Output.write(jws + "\n", to: 1)
        case "intro-offer-eligibility":
            let allow: Bool
            switch values["--allow"]! {
            case "true": allow = true
            case "false": allow = false
            case let other: throw UsageError(message: "--allow expects true or false, got \"\(other)\"", command: "sign")
            }
            let jws = signer.introductoryOfferEligibility(
                productId: values["--product"]!, allowIntroductoryOffer: allow, transactionId: values["--transaction-id"]!,
                nonce: UUID().uuidString.lowercased(), issuedAt: now / 1000)
            Output.write(jws + "\n", to: 1)
        default:
            var nonce = UUID().uuidString.lowercased()
            if let given = values["--nonce"] {
                guard let uuid = UUID(uuidString: given) else {
                    throw UsageError(message: "--nonce expects a UUID, got \"\(given)\"", command: "sign")
                }
                nonce = uuid.uuidString.lowercased()
            }
            var timestamp = now
            if let text = values["--timestamp"] {
                do { timestamp = try TimeArgument.parse(text) } catch {
                    throw UsageError(message: "--timestamp \(error.message)", command: "sign")
                }
            }
            let signature = signer.promotionalOfferV1(
                productId: values["--product"]!, offerId: values["--offer"]!, appAccountToken: values["--app-account-token"]!,
                nonce: nonce, timestamp: timestamp)
            Output.line([
                "keyId": .string(signature.keyId), "nonce": .string(signature.nonce), "timestamp": .int(signature.timestamp),
                "signature": .string(signature.signature),
            ])
        }
        return .success
    }

    /// The configuration's signer, or `nil` after printing why there is none (exit 2).
    static func loadSigner(_ arguments: Arguments, command: String) throws(UsageError) -> AppStoreSigner? {
        guard let configuration = try loadConfiguration(arguments, command: command) else { return nil }
        return signer(configuration, command: command)
    }

    static func loadConfiguration(_ arguments: Arguments, command: String) throws(UsageError) -> EngineConfiguration? {
        guard let path = arguments.values["--config"] else {
            throw UsageError(message: "--config PATH is required", command: command)
        }
        do {
            return try EngineConfiguration.loadChecked(path: path)
        } catch {
            Output.error("entitlements \(command): \(error.description)")
            return nil
        }
    }

    static func signer(_ configuration: EngineConfiguration, command: String) -> AppStoreSigner? {
        guard let api = configuration.appStoreServerAPI else {
            Output.error(
                "entitlements \(command): configuration field \"appStoreServerAPI\": required by \(command): {\"issuerId\", \"keyId\", \"privateKeyPath\"} of the In-App Purchase key")
            return nil
        }
        do {
            return try api.signer(bundleId: configuration.bundleId)
        } catch {
            Output.error("entitlements \(command): \(error.code.rawValue): \(error.message)")
            return nil
        }
    }
}
