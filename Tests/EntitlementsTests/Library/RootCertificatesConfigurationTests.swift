import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `rootCertificates` are trust anchors: a chain's leaf or intermediate listed there (Apple's
/// WWDR intermediate downloaded in place of its root, say) anchors no chain, so every
/// input would be INVALID_CHAIN. The file is named instead, exit 2.
@Suite struct RootCertificatesConfigurationTests {
    static func load(rootFile: String, in folder: URL) throws(ConfigurationError) -> EngineConfiguration {
        let document = JSONValue.object(
            JSONObject([
                ("bundleId", "com.example.app"), ("environment", "Sandbox"), ("rootCertificates", [.string(rootFile)]),
                ("rules", ["version": "1", "products": [:]]),
            ]))
        return try EngineConfiguration(json: document, baseDirectory: folder)
    }

    @Test func aRootIsTakenAndALeafOrIntermediateIsNamed() throws {
        let folder = Scenario.temporaryFolder("roots")
        let pki = E2E.pki
        try Data(pki.rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        try Data(pki.intermediatePEM.utf8).write(to: folder.appendingPathComponent("intermediate.pem"))
        try Data(pki.leafDER).write(to: folder.appendingPathComponent("leaf.cer"))
        #expect(try Self.load(rootFile: "root.pem", in: folder).rootCertificatesDER == [pki.rootDER])
        for name in ["intermediate.pem", "leaf.cer"] {
            do {
                _ = try Self.load(rootFile: name, in: folder)
                Issue.record("\(name) was accepted as a trusted root")
            } catch {
                #expect(error.field == "rootCertificates[0]", "\(error)")
                #expect(error.description.contains("is not a root certificate"), "\(error)")
            }
        }
    }
}
