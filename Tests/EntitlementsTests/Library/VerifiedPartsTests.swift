import Entitlements
@testable import EventStore
import Foundation
import Testing
import TestPKI

/// The verifier hands the log the payload bytes it decoded (issue 16), so that the log
/// does not decode every segment a second time: the parts stored from those bytes must
/// be exactly the parts decoded afresh, and give back the JWS byte for byte.
@Suite struct VerifiedPartsTests {
    typealias Workspace = Reliability.Workspace
    typealias History = Reliability.History

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
}
