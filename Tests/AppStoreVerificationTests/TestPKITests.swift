import Foundation
import Testing
@testable import AppStoreVerification
import EntitlementCore
import TestPKI
import TestSupport

@Suite("TestPKI")
struct TestPKITests {
    @Test func certificatesAreShapedLikeApples() throws {
        let pki = Shared.pki
        #expect(pki.x5c.count == 3)
        #expect(pki.x5c[0] == Base64Encoding.standard(pki.leafDER))
        #expect(pki.x5c.allSatisfy { $0.utf8.count % 4 == 0 })
        let leaf = try #require(X509Certificate.parse(pki.leafDER))
        let intermediate = try #require(X509Certificate.parse(pki.intermediateDER))
        #expect(leaf.hasExtension(.appleReceiptSigner))
        #expect(!leaf.hasExtension(.appleWWDRIntermediate))
        #expect(intermediate.hasExtension(.appleWWDRIntermediate))
        #expect(leaf.p256PublicKey() != nil)
        #expect(intermediate.p256PublicKey() == nil)  // P-384
        #expect(leaf.notBeforeMillis == Validity.standard.notBefore)
        #expect(leaf.notAfterMillis == Validity.standard.notAfter)
        #expect(leaf.subject == "CN=Test ECC Mac App Store and iTunes Store Receipt Signing")
    }

    @Test func headerAndSignatureAreAppleShaped() {
        let jws = Shared.pki.sign(["signedDate": 1])
        let header = String(decoding: base64URLDecode(segment(.header, of: jws)), as: UTF8.self)
        #expect(header.hasPrefix(#"{"alg":"ES256","x5c":[""#))
        #expect(base64URLDecode(segment(.signature, of: jws)).count == 64)
        #expect(payloadText(jws) == #"{"signedDate":1}"#)
    }

    @Test func sharingRootKeepsTheRoot() {
        let child = TestPKI(sharingRootWith: Shared.pki)
        #expect(child.rootDER == Shared.pki.rootDER)
        #expect(child.intermediateDER != Shared.pki.intermediateDER)
        #expect(child.leafDER != Shared.pki.leafDER)
    }

    @Test func saveAndLoadRoundTrip() throws {
        let folder = Scenario.temporaryFolder("testpki")
        defer { try? FileManager.default.removeItem(at: folder) }
        let pki = TestPKI(.leafValid(Validity(notBefore: 1_600_000_000_000, notAfter: 1_900_000_000_000)))
        try pki.save(to: folder)
        let loaded = try TestPKI.load(from: folder)
        #expect(loaded.rootDER == pki.rootDER)
        #expect(loaded.intermediateDER == pki.intermediateDER)
        #expect(loaded.leafDER == pki.leafDER)
        #expect(loaded.options.leafValidity == Validity(notBefore: 1_600_000_000_000, notAfter: 1_900_000_000_000))
        // The loaded keys sign for the saved root.
        let jws = loaded.sign(TestPayloads.transaction())
        #expect(code { try Shared.verifier(roots: [pki.rootDER]).verifyTransaction(jws) } == "OK")
        // And the root PEM file loads as a configured root.
        let pem = try Data(contentsOf: folder.appendingPathComponent(TestPKI.fileNames.root))
        #expect(try loadCertificate(from: pem) == pki.rootDER)
    }

    @Test func loadingAnIncompleteFolderThrows() throws {
        let folder = Scenario.temporaryFolder("testpki")
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: TestPKI.LoadError.self) { try TestPKI.load(from: folder) }
        try Shared.pki.save(to: folder)
        // A key that belongs to another certificate.
        try Data(contentsOf: folder.appendingPathComponent(TestPKI.fileNames.rootKey))
            .write(to: folder.appendingPathComponent(TestPKI.fileNames.leafKey))
        #expect(throws: TestPKI.LoadError.self) { try TestPKI.load(from: folder) }
    }

    @Test func payloadBuildersUseApplesFieldNames() throws {
        let transaction = try TransactionPayload(json: TestPayloads.transaction(
            revocationDate: 1_736_000_000_000, revocationType: "REFUND_PRORATED", revocationPercentage: 25_000,
            revocationReason: 1, isUpgraded: true, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            subscriptionGroupIdentifier: "21000000", webOrderLineItemId: "2000000000000099"))
        #expect(transaction.revocationType == .refundProrated)
        #expect(transaction.revocationPercentage == 25_000)
        #expect(transaction.isUpgraded)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.originalTransactionId == transaction.transactionId)
        #expect(transaction.signedDate == transaction.purchaseDate)
        #expect(transaction.expiresDate == TestPayloads.january2025 + TestPayloads.thirtyDays)

        let renewal = try RenewalInfoPayload(json: TestPayloads.renewalInfo(autoRenewStatus: 0, expirationIntent: 1))
        #expect(renewal.autoRenewStatus == 0)
        #expect(renewal.expirationIntent == 1)

        let app = try AppTransactionPayload(json: TestPayloads.appTransaction())
        #expect(app.receiptType == "Sandbox")
        #expect(app.appTransactionId == "704000000000000001")

        let notification = try NotificationPayload(json: TestPayloads.notification(
            type: "DID_RENEW", uuid: "u-1", signedTransactionInfo: "t", signedRenewalInfo: "r", status: 1))
        #expect(notification.notificationType == .didRenew)
        #expect(notification.data?.signedTransactionInfo == "t")
        #expect(notification.data?.signedRenewalInfo == "r")
        #expect(notification.data?.status == 1)
        #expect(notification.version == "2.0")

        #expect(TestPayloads.body(signedPayload: "a.b.c") == #"{"signedPayload":"a.b.c"}"#)
        #expect(TestPayloads.body(signedTransactionInfo: "a.b.c") == #"{"signedTransactionInfo":"a.b.c"}"#)
    }

    @Test func freshNotificationsHaveDistinctUUIDs() throws {
        let a = try NotificationPayload(json: TestPayloads.notification())
        let b = try NotificationPayload(json: TestPayloads.notification())
        #expect(a.notificationUUID != b.notificationUUID)
    }
}
