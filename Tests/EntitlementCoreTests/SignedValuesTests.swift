@testable import EntitlementCore
import Testing

/// The signed values keep their parts in a box their copies share: they must still behave
/// as values. A part set on a copy changes that copy alone, equality and hashing are of the
/// parts (the verifier's kept bytes aside), and a value set back equals the original.
@Suite("Signed values")
struct SignedValuesTests {
    private let original = transaction("2000000000000101", purchase: Time.day(0), expires: Time.day(30))
    private let renewalInfo = renewal(signed: Time.day(0))

    @Test func aTransactionChangedOnACopyLeavesTheOriginal() {
        var copy = original
        #expect(copy == original && copy.hashValue == original.hashValue)
        copy.payload.productId = Product.yearly
        #expect(original.payload.productId == Product.monthly)
        #expect(copy.payload.productId == Product.yearly)
        #expect(copy != original)
        copy.payload.productId = Product.monthly
        #expect(copy == original && copy.hashValue == original.hashValue)
        copy.jws += "~resigned"
        #expect(copy != original)
        #expect(original.jws.hasSuffix("~resigned") == false)
    }

    @Test func theVerifiersBytesAreKeptButAreNoPartOfEquality() {
        var kept = original
        kept.signedBytes = SignedBytes([1, 2, 3], jwsDigest: [9])
        #expect(kept.signedBytes.bytes == [1, 2, 3] && kept.signedBytes.jwsDigest == [9])
        #expect(original.signedBytes.bytes == nil && original.signedBytes.jwsDigest == nil)
        #expect(kept == original && kept.hashValue == original.hashValue)
        let made = SignedTransaction(jws: original.jws, payload: original.payload, signedBytes: SignedBytes([4]))
        #expect(made == original && made.signedBytes.bytes == [4])
    }

    @Test func aNotificationsNestedValuesChangeOnTheCopyAlone() throws {
        let payload = try NotificationPayload(
            json: object([
                ("notificationType", json("DID_RENEW")), ("notificationUUID", json("00000000-0000-4000-8000-000000000001")),
                ("signedDate", json(Time.day(0))),
            ]))
        let notification = SignedNotification(jws: "n.jws", payload: payload, transaction: original, renewalInfo: renewalInfo)
        var copy = notification
        copy.transaction?.payload.expiresDate = Time.day(60)
        copy.renewalInfo = nil
        #expect(notification.transaction?.payload.expiresDate == Time.day(30))
        #expect(notification.renewalInfo == renewalInfo)
        #expect(copy.transaction?.payload.expiresDate == Time.day(60) && copy.renewalInfo == nil)
        #expect(copy != notification)
        copy.transaction = original
        copy.renewalInfo = renewalInfo
        #expect(copy == notification && copy.hashValue == notification.hashValue)
        // A verified input holding the value reads the same parts.
        let input = VerifiedInput.notification(copy)
        #expect(input.jws == "n.jws" && input.kind == .notification)
        #expect(Set([VerifiedInput.notification(notification), input]).count == 1)
    }
}
