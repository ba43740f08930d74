import Foundation
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI
import TestSupport

/// Shared material: PKI generation takes a few milliseconds, so tests reuse these.
enum Shared {
    static let pki = TestPKI()
    static let otherPKI = TestPKI()

    static let bundleId = TestPayloads.bundleId
    static let appAppleId = TestPayloads.appAppleId

    static func configuration(
        _ environment: AppStoreEnvironment = .sandbox, bundleId: String = bundleId, appAppleId: Int64? = appAppleId,
        roots: [[UInt8]]? = nil, cache: Int = 64, keyTableAfter: Int? = VerifierConfiguration.keyTableDefault
    ) -> VerifierConfiguration {
        VerifierConfiguration(
            bundleId: bundleId, appAppleId: appAppleId, environment: environment,
            trustedRootsDER: roots ?? [pki.rootDER], chainCacheCapacity: cache, keyTableAfter: keyTableAfter)
    }

    static func verifier(
        _ environment: AppStoreEnvironment = .sandbox, bundleId: String = bundleId, appAppleId: Int64? = appAppleId,
        roots: [[UInt8]]? = nil, cache: Int = 64, keyTableAfter: Int? = VerifierConfiguration.keyTableDefault
    ) -> SignedDataVerifier {
        try! SignedDataVerifier(
            configuration: configuration(
                environment, bundleId: bundleId, appAppleId: appAppleId, roots: roots, cache: cache, keyTableAfter: keyTableAfter))
    }
}

/// The package root (``Scenario/packageRoot``).
func packageRoot() -> URL { Scenario.packageRoot }

/// The JWS held by a real Apple sample (`Fixtures/real/<name>`), under its only key.
func realSample(_ name: String) throws -> String {
    let url = packageRoot().appendingPathComponent("Fixtures/real").appendingPathComponent(name)
    let data = try Data(contentsOf: url)
    guard case .object(let object) = try JSONParser().parse(Array(data)), let member = object.members.first,
        case .string(let jws) = member.value
    else { throw SampleError() }
    return jws
}

struct SampleError: Error {}

/// Runs `body` and returns the ``VerificationError`` it threw, or `nil` when it succeeded.
func verificationError<T>(_ body: () throws -> T) -> VerificationError? {
    do {
        _ = try body()
        return nil
    } catch let error as VerificationError {
        return error
    } catch {
        return VerificationError(.init(rawValue: "NOT_A_VERIFICATION_ERROR"), "\(error)")
    }
}

/// The error code `body` threw, or `"OK"` when it succeeded.
func code<T>(_ body: () throws -> T) -> String {
    verificationError(body)?.code.rawValue ?? "OK"
}

enum Segment: Int { case header = 0, payload = 1, signature = 2 }

/// The JWS with one segment replaced.
func replacing(_ segment: Segment, of jws: String, with text: String) -> String {
    var parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    parts[segment.rawValue] = text
    return parts.joined(separator: ".")
}

func segment(_ segment: Segment, of jws: String) -> String {
    String(jws.split(separator: ".", omittingEmptySubsequences: false)[segment.rawValue])
}

/// The JWS with the base64url character at `offset` of `segment` changed to another valid one.
func alteringCharacter(of jws: String, in segment: Segment, at offset: Int) -> String {
    var characters = Array(AppStoreVerificationTests.segment(segment, of: jws).utf8)
    let index = offset >= 0 ? offset : characters.count + offset
    characters[index] = characters[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
    return replacing(segment, of: jws, with: String(decoding: characters, as: UTF8.self))
}

/// The JWS with one decoded byte of `segment` flipped (re-encoded as valid base64url).
func flippingByte(of jws: String, in segment: Segment, at offset: Int) -> String {
    var bytes = base64URLDecode(AppStoreVerificationTests.segment(segment, of: jws))
    let index = offset >= 0 ? offset : bytes.count + offset
    bytes[index] ^= 0x01
    return replacing(segment, of: jws, with: Base64Encoding.url(bytes))
}

func base64URLDecode(_ text: String) -> [UInt8] {
    var copy = text
    return copy.withUTF8 { Base64.decodeURL($0) }!
}

/// The decoded payload of a JWS, as JSON text.
func payloadText(_ jws: String) -> String {
    String(decoding: base64URLDecode(segment(.payload, of: jws)), as: UTF8.self)
}
