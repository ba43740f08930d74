// libFuzzer target over everything that reads untrusted bytes before a signature is trusted:
// the input-document layer (InputDocument), compact JWS splitting and strict base64, the JWS
// header and x5c parsing (X.509 DER through OpenSSL), legacy receipts (PKCS#7 through OpenSSL,
// the ASN.1 receipt payload reader), the strict JSON parser and writer, the
// App Store payload models, and — from whatever decodes — events, reducers, evaluation and the
// binary codecs. Built by Fuzz/run.sh with `swiftc -sanitize=fuzzer,address` (not a SwiftPM target).
//
// The first byte of an input picks the mode; the rest is the data. Besides "no crash, no hang",
// several modes check properties and trap when one fails (libFuzzer then saves the input).

@testable import AppStoreVerification
import EntitlementCore

let localVerifier = try! SignedDataVerifier(
    configuration: VerifierConfiguration(bundleId: "com.example.app", appAppleId: nil, environment: .xcode, trustedRootsDER: []))
let sandboxVerifier = try! SignedDataVerifier(
    configuration: VerifierConfiguration(
        bundleId: "com.example.app", appAppleId: 1_234_567_890, environment: .sandbox,
        trustedRootsDER: [AppleRootCertificate.g3DER] + FuzzRoots.extra))
let productionVerifier = try! SignedDataVerifier(
    configuration: VerifierConfiguration(
        bundleId: "com.example.app", appAppleId: 1_234_567_890, environment: .production, trustedRootsDER: [AppleRootCertificate.g3DER]))
let receiptVerifier = try! ReceiptVerifier(bundleId: "com.example.app", environments: [.sandbox])
let xcodeReceiptVerifier = try! ReceiptVerifier(bundleId: "com.example.app", environments: [.xcode])
let rules = Rules(
    version: "fuzz", products: [
        "com.example.pro.monthly": ProductRule(entitlements: ["pro"]),
        "com.example.lifetime": ProductRule(entitlements: ["pro"]),
        "com.example.pass.week": ProductRule(entitlements: ["pro"], durationDays: 7),
        "com.example.coins.100": ProductRule(currency: "coins", units: 100),
    ])

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property failed: \(message())") }
}

/// Every way a verifier can be asked about a JWS.
func verifyAllWays(_ verifier: SignedDataVerifier, _ jws: String) {
    _ = try? verifier.verify(jws)
    _ = try? verifier.verifyNotification(jws)
    _ = try? verifier.verifyTransaction(jws)
    _ = try? verifier.verifyRenewalInfo(jws)
    _ = try? verifier.verifyAppTransaction(jws)
}

/// JSON: the writer's output of anything the parser accepts parses again to the same text.
func fuzzJSON(_ bytes: ArraySlice<UInt8>) {
    for depth in [64, 8] {
        guard let value = try? JSONParser(maximumDepth: depth).parse(bytes) else { continue }
        let text = JSONWriter.string(value)
        guard let again = try? JSONParser(maximumDepth: 64).parse(text) else { check(false, "writer output does not parse: \(text)"); return }
        check(JSONWriter.string(again) == text, "writer/parser round trip changed \(text)")
    }
}

/// Payload models; from whatever decodes: an event, its codec round trip, the reducer, evaluation, the state codec.
func fuzzPayloads(_ bytes: ArraySlice<UInt8>) {
    guard let json = try? JSONParser().parse(bytes) else { return }
    var inputs: [VerifiedInput] = []
    if let p = try? TransactionPayload(json: json) { inputs.append(.transaction(SignedTransaction(jws: "h.t.s", payload: p))) }
    if let p = try? RenewalInfoPayload(json: json) { inputs.append(.renewalInfo(SignedRenewalInfo(jws: "h.r.s", payload: p))) }
    if let p = try? AppTransactionPayload(json: json) { inputs.append(.appTransaction(SignedAppTransaction(jws: "h.a.s", payload: p))) }
    if let p = try? NotificationPayload(json: json) {
        var notification = SignedNotification(jws: "h.n.s", payload: p)
        // Nested payloads, when the data holds decodable ones under these names as JSON objects.
        if let nested = json["data"]?["transaction"], let t = try? TransactionPayload(json: nested) {
            notification.transaction = SignedTransaction(jws: "h.nt.s", payload: t)
        }
        if let nested = json["data"]?["renewalInfo"], let r = try? RenewalInfoPayload(json: nested) {
            notification.renewalInfo = SignedRenewalInfo(jws: "h.nr.s", payload: r)
        }
        inputs.append(.notification(notification))
    }
    for input in inputs {
        let event = Event(seq: 7, input: input)
        let encoded = EventCodec.encode(event)
        guard let decoded = try? EventCodec.decode(encoded, seq: 7) else { check(false, "event codec cannot read its own bytes"); continue }
        check(EventCodec.encode(decoded) == encoded, "event codec round trip differs")
        var state = CustomerState(key: event.customerKey ?? "fuzz")
        var raws: [RawRef: String] = [:]
        for _ in 0..<3 {
            do {
                try state.apply(event, rules: rules)
                break
            } catch {
                for ref in error.refs { raws[ref] = "raw-\(ref.eventSeq)" }
                state.hydrate(raws)
            }
        }
        let stateBytes = StateCodec.encode(state)
        guard let back = try? StateCodec.decode(stateBytes) else { check(false, "state codec cannot read its own bytes"); continue }
        check(StateCodec.encode(back) == stateBytes, "state codec round trip differs")
        for at in [Int64(0), event.signedDate, event.signedDate + 86_400_000, Int64.max] {
            let whole = Evaluation.evaluate(state, rules: rules, at: at)
            _ = JSONWriter.string(whole.json())
            // The query path, from the stored bytes, answers the same.
            let fromBytes = try? stateBytes.withUnsafeBytes { buffer throws(CodecError) in
                try Evaluation.evaluate(stateBytes: buffer, rules: rules, at: at)
            }
            check(fromBytes == whole, "evaluating the stored bytes differs from evaluating the state")
        }
    }
}

/// Standard base64 with padding (the fuzz target's own encoder, to check the decoders against).
func encodeStandard(_ bytes: some Collection<UInt8>, url: Bool = false) -> String {
    let alphabet = Array((url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").utf8)
    let input = Array(bytes)
    var out: [UInt8] = []
    var index = 0
    while index < input.count {
        let b0 = input[index], b1 = index + 1 < input.count ? input[index + 1] : 0, b2 = index + 2 < input.count ? input[index + 2] : 0
        out.append(alphabet[Int(b0 >> 2)])
        out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
        if index + 1 < input.count { out.append(alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)]) } else if !url { out.append(UInt8(ascii: "=")) }
        if index + 2 < input.count { out.append(alphabet[Int(b2 & 0x3F)]) } else if !url { out.append(UInt8(ascii: "=")) }
        index += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// Strict base64: whatever decodes re-encodes to exactly the input (one accepted encoding per byte string).
func fuzzBase64(_ bytes: ArraySlice<UInt8>) {
    let array = Array(bytes)
    array.withUnsafeBufferPointer { buffer in
        if let decoded = Base64.decodeStandardPadded(buffer) {
            check(Array(encodeStandard(decoded).utf8) == array, "standard base64 accepted a non-canonical encoding")
        }
        if let decoded = Base64.decodeURL(buffer) {
            check(Array(encodeStandard(decoded, url: true).utf8) == array, "base64url accepted a non-canonical encoding")
        }
        _ = Base64.decodePEMBody(array)
    }
}

/// A JWS assembled from three raw parts separated by 0xFF bytes (base64url-encoded by the harness),
/// so that mutations reach the header and payload JSON directly.
func assembled(_ bytes: ArraySlice<UInt8>) -> String {
    let parts = bytes.split(separator: 0xFF, maxSplits: 2, omittingEmptySubsequences: false)
    func b64(_ part: ArraySlice<UInt8>) -> String {
        encodeStandard(part, url: true)
    }
    return parts.map(b64).joined(separator: ".")
}

/// Legacy receipts: PKCS#7 through OpenSSL, the ASN.1 payload reader, and from whatever reads,
/// its events (one per original transaction id), their codec round trip, the reducer, evaluation.
func fuzzReceipt(_ bytes: ArraySlice<UInt8>) {
    let der = Array(bytes)
    _ = try? receiptVerifier.verify(der: der)
    _ = try? xcodeReceiptVerifier.verify(der: der)
    guard let payload = try? ReceiptPayloadReader.read(der) else { return }
    let receipt = SignedReceipt(base64: "AA==", sha256: "00", payload: payload)
    for part in receipt.parts.prefix(8) {
        let event = Event(seq: 3, input: .receipt(part))
        let encoded = EventCodec.encode(event)
        check((try? EventCodec.decode(encoded, seq: 3)).map(EventCodec.encode) == encoded, "receipt event codec round trip")
        var state = CustomerState(key: event.customerKey ?? "fuzz")
        try? state.apply(event, rules: rules)
        _ = Evaluation.evaluate(state, rules: rules, at: 1_700_000_000_000)
        check((try? StateCodec.decode(StateCodec.encode(state))) == state, "state codec round trip of a receipt's state")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let all = UnsafeBufferPointer(start: data, count: size)
    let bytes = ArraySlice(all.dropFirst())
    let text = String(decoding: bytes, as: UTF8.self)
    switch all[0] % 8 {
    case 0: fuzzJSON(bytes)
    case 1: fuzzPayloads(bytes)
    case 2: verifyAllWays(localVerifier, text)
    case 3: verifyAllWays(localVerifier, assembled(bytes))
    case 4:
        verifyAllWays(sandboxVerifier, text)
        verifyAllWays(productionVerifier, text)
    case 5: verifyAllWays(sandboxVerifier, assembled(bytes))
    case 6:
        // The input-document layer, then each item through both verifiers. Its fast path for
        // Apple's compact notification body must agree with the strict parser.
        if let fast = InputDocument.compactNotificationBody(bytes) {
            let strict = (try? JSONParser().parse(bytes)).map { InputDocument.items($0) }
            if case .success(let items)? = strict {
                check(items.count == 1 && items[0].jws == fast, "fast path disagrees with the parser")
            } else {
                check(false, "fast path accepted what the parser refuses")
            }
        }
        if case .success(let items) = InputDocument.items(bytes) {
            for item in items.prefix(8) {
                verifyAllWays(localVerifier, item.jws)
                _ = try? sandboxVerifier.verify(item.jws)
            }
        }
    default:
        fuzzReceipt(bytes)
        fuzzBase64(bytes)
        _ = try? EventCodec.decode(bytes, seq: 1)
        _ = try? StateCodec.decode(bytes)
        if let event = try? EventCodec.decode(bytes, seq: 1) {
            let encoded = EventCodec.encode(event)
            check((try? EventCodec.decode(encoded, seq: 1)).map(EventCodec.encode) == encoded, "event codec round trip of decoded bytes")
        }
        if let state = try? StateCodec.decode(bytes) {
            let encoded = StateCodec.encode(state)
            check((try? StateCodec.decode(encoded)).map(StateCodec.encode) == encoded, "state codec round trip of decoded bytes")
        }
        // The query path reads damaged bytes without trapping, and whatever it reads
        // whole it answers as the whole state does.
        let queryRules = Rules(version: "fuzz")
        let answer = try? Array(bytes).withUnsafeBytes { buffer throws(CodecError) in
            try Evaluation.evaluate(stateBytes: buffer, rules: queryRules, at: 1_700_000_000_000)
        }
        if let state = try? StateCodec.decode(bytes), let answer {
            check(answer == Evaluation.evaluate(state, rules: queryRules, at: 1_700_000_000_000), "query path differs on decodable bytes")
        }
    }
    return 0
}
