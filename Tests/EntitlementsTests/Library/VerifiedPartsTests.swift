import Entitlements
@testable import EventStore
import Foundation
import Testing
import TestPKI
import TestSupport

/// The verifier hands the log the payload bytes it decoded, so that the log
/// does not decode every segment a second time: the parts stored from those bytes must
/// be exactly the parts decoded afresh, and give back the JWS byte for byte.
@Suite struct VerifiedPartsTests {

    /// Every verified item of a generated history (notifications with nested JWS, and bare JWS).
    static func verifiedInputs() throws -> [VerifiedInput] {
        let workspace = try Workspace(name: "verified-parts")
        let engine = try workspace.engine("parts.sqlite")
        let history = History.generate(lines: 60, seed: 0x1616)
        return history.lines.flatMap { line in
            engine.documentVerifier.verifiedItems(InputBytes(bytes: Array(line.text.utf8))).compactMap { item -> VerifiedInput? in
                if case .verified(let input) = item { return input }
                return nil
            }
        }
    }

    static func fresh(_ input: VerifiedInput) -> StoredJWS? {
        StoredJWS(jws: input.jws, nested: StoredJWS.nestedCandidates(of: input).map { ($0.path, $0.jws) })
    }

    @Test func partsFromTheVerifiersBytesAreThePartsDecodedAgain() throws {
        let inputs = try Self.verifiedInputs()
        #expect(inputs.count > 40)
        var nested = 0
        for input in inputs {
            #expect(input.signedBytes != nil, "the verifier keeps the payload bytes of \(input.kind)")
            if case .notification(let n) = input {
                #expect(n.transaction?.signedBytes.bytes != nil)
                if let r = n.renewalInfo { #expect(r.signedBytes.bytes != nil) }
            }
            guard let stored = StoredJWS(input), let decoded = Self.fresh(input) else {
                Issue.record("a verified \(input.kind) did not split")
                continue
            }
            #expect(stored == decoded)
            #expect(stored.jws == input.jws)
            nested += stored.nested.count
        }
        #expect(nested > 10, "the notifications' nested JWS were cut out")
    }

    @Test func bytesOfAnotherLengthAreNotTakenForThePayload() throws {
        for input in try Self.verifiedInputs().prefix(10) {
            guard case .notification(var n) = input, var t = n.transaction else { continue }
            n.signedBytes = SignedBytes(Array("{}".utf8))
            t.signedBytes = SignedBytes([])
            n.transaction = t
            let altered = VerifiedInput.notification(n)
            #expect(StoredJWS(altered)?.jws == input.jws)
            #expect(StoredJWS(altered) == Self.fresh(input))
        }
    }

    /// Values that differ only in carrying the bytes are equal: the bytes follow from the JWS.
    @Test func theBytesAreNotPartOfTheValue() throws {
        guard case .notification(let n)? = try Self.verifiedInputs().first(where: { $0.kind == .notification }) else {
            Issue.record("no notification")
            return
        }
        var without = n
        without.signedBytes = SignedBytes()
        #expect(without == n)
        #expect(without.hashValue == n.hashValue)
    }

    /// Apple's body read without the JSON parser gives what the parser gives, for every
    /// body the fast path takes, and leaves escapes and non-ASCII to the parser.
    @Test func theNotificationBodyFastPathAgreesWithTheParser() throws {
        let bodies = [
            #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln"}"#,
            #"{"signedPayload":"ab!c.d~e.f g"}"#,
            #"{"signedPayload":"a\/b.c.d"}"#,
            #"{"signedPayload":"a\u002Eb.c.d"}"#,
            #"{"signedPayload":"é.c.d"}"#,
            #"{"signedPayload":"a.b.c","x":1}"#,
            "{\"signedPayload\":\"" + String(repeating: "A", count: 4_099) + ".b.c\"}",
        ]
        for body in bodies {
            let items = try InputDocument.items(Array(body.utf8)[...]).get()
            let parsed = try JSONParser().parse(Array(body.utf8))
            guard case .string(let expected)? = parsed["signedPayload"] else {
                Issue.record("no signedPayload in \(body)")
                continue
            }
            #expect(items.map(\.jws) == [expected], "\(body.prefix(60))")
        }
    }

    /// What one document gives when read strictly first (the parser, then the verifier):
    /// the reference the ingest path's reading of Apple's body must match.
    static func strictOutcome(_ verifier: DocumentVerifier, _ body: String) -> [String] {
        switch InputDocument.items(Array(body.utf8)[...]) {
        case .failure(let malformed): return ["rejected MALFORMED_INPUT \(malformed.message) \(Array(body.utf8))"]
        case .success(let items):
            return items.map { item in
                switch verifier.verify(item) {
                case .success(let input): return "verified \(input.jws)"
                case .failure(let error): return "rejected \(error.code.rawValue) \(error.message) \(Array(item.jws.utf8))"
                }
            }
        }
    }

    static func outcome(_ verifier: DocumentVerifier, _ body: String) -> [String] {
        verifier.verifiedItems(InputBytes(bytes: Array(body.utf8))).map { item in
            switch item {
            case .verified(let input): return "verified \(input.jws)"
            case .rejected(let r): return "rejected \(r.code) \(r.message) \(r.raw)"
            }
        }
    }

    /// The ingest path hands the JWS between the quotes of `{"signedPayload":"…"}` to the
    /// verifier unread, and reads the bytes only when the verifier refuses them (or checks
    /// no signatures): every body, escaped, altered or malformed, gives what the strict
    /// reading gives, for signed and for unsigned (Xcode) data.
    @Test func applesBodyIsVerifiedUnreadWithTheStrictOutcome() throws {
        let signedVerifier = try DocumentVerifier(
            configuration: EngineConfiguration(
                bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
                environments: [.sandbox], rootCertificatesDER: [E2E.pki.rootDER], rules: E2E.rules))
        let unsignedVerifier = try DocumentVerifier(
            configuration: EngineConfiguration(
                bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .xcode,
                environments: [.xcode], rootCertificatesDER: [E2E.pki.rootDER], rules: E2E.rules))
        let signed = E2E.pki.sign(TestPayloads.notification(type: "TEST", uuid: "00000000-0000-4000-8000-00000000b0d7"))
        let unsigned = Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8)) + "."
            + Base64.encodeURL(JSONWriter.bytes(TestPayloads.notification(type: "TEST", environment: "Xcode"))) + ".c2ln"
        for (verifier, jws, checks) in [(signedVerifier, signed, true), (unsignedVerifier, unsigned, false)] {
            #expect(verifier.verifier.checksSignatures == checks)
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let escapedFirst = "\\u00" + String(jws.utf8.first!, radix: 16)  // the first character as \u00XX
            let open = #"{"signedPayload":""#
            let close = #""}"#
            let header = parts[0], payload = parts[1], signature = parts[2]
            var bodies: [String] = []
            bodies.append(TestPayloads.body(signedPayload: jws))
            bodies.append("  " + TestPayloads.body(signedPayload: jws) + "\n")
            bodies.append(open + escapedFirst + String(jws.dropFirst()) + close)
            bodies.append(open + header + "." + payload + "." + String(signature.dropLast()) + "\\u0041" + close)
            bodies.append(open + header + "\\/." + payload + "." + signature + close)
            bodies.append(open + header + "." + payload + ".\u{01}" + signature + close)
            bodies.append(open + header + "." + payload + "." + signature + "\"" + close)
            bodies.append(open + header + "." + payload + "." + signature + "é" + close)
            bodies.append(open + header + "." + payload + "." + String(signature.reversed()) + close)
            bodies.append(open + header + "." + payload + close)
            bodies.append(open + close)
            for body in bodies {
                let got = Self.outcome(verifier, body)
                #expect(got == Self.strictOutcome(verifier, body), "\(checks ? "signed" : "unsigned"): \(body.prefix(40))…\(body.suffix(30))")
                #expect(got.count == 1)
            }
            // The escaped bodies mean the JWS itself, and verify as it.
            #expect(Self.outcome(verifier, bodies[2]) == ["verified \(jws)"])
            #expect(Self.outcome(verifier, bodies[0]) == ["verified \(jws)"])
        }
    }
}
