import EntitlementCore
import Testing

/// `history` names a legacy receipt's entry as its own cause kind, `receipt`.
@Suite("History of receipt entries")
struct ReceiptHistoryTests {
    static let otid = "1000000000000001"

    static func receipt(_ entries: [ReceiptInAppEntry], created: Int64) -> VerifiedInput {
        let payload = ReceiptPayload(bundleId: "com.example.app", creationDate: created, inApp: entries)
        let signed = SignedReceipt(base64: "AAAA", sha256: String(repeating: "ab", count: 32), payload: payload)
        return .receipt(ReceiptPart(receipt: signed, originalTransactionId: otid, entries: entries))
    }

    @Test func aReceiptEntryIsTheCauseOfKindReceipt() throws {
        let history = History()
        let entry = ReceiptInAppEntry(
            productId: Product.monthly, transactionId: Self.otid, originalTransactionId: Self.otid, purchaseDate: Time.t0,
            expiresDate: Time.day(30))
        history.add(Self.receipt([entry], created: Time.day(1)))
        let lines = CustomerHistory.timeline(
            state: history.state("otid:" + Self.otid), events: history.events, rules: testRules, until: Time.day(400))
        let receipt = { (field: String) in HistoryCause(kind: .receipt, id: Self.otid, field: field) }
        let expected = [
            HistoryLine(
                at: Time.t0, change: .entitlement(name: "pro", active: true, expiresDate: Time.day(30), productId: Product.monthly),
                cause: receipt("purchaseDate")),
            HistoryLine(at: Time.t0, change: .subscription(originalTransactionId: Self.otid, status: .active, previous: nil), cause: receipt("purchaseDate")),
            HistoryLine(
                at: Time.day(30), change: .entitlement(name: "pro", active: false, expiresDate: nil, productId: nil), cause: receipt("expiresDate")),
            HistoryLine(
                at: Time.day(30), change: .subscription(originalTransactionId: Self.otid, status: .expired, previous: .active),
                cause: receipt("expiresDate")),
        ]
        #expect(lines == expected)
        #expect(lines[0].cause.map { JSONWriter.string($0.json()) } == #"{"kind":"receipt","id":"1000000000000001","field":"purchaseDate"}"#)

        // Signed V2 data for the same transaction id wins: then the cause is the transaction.
        history.add(transaction(Self.otid, original: Self.otid, purchase: Time.t0, expires: Time.day(30), app: nil))
        let signed = CustomerHistory.timeline(
            state: history.state("otid:" + Self.otid), events: history.events, rules: testRules, until: Time.day(400))
        #expect(!signed.isEmpty)
        #expect(signed.allSatisfy { $0.cause?.kind == .transaction })
    }

    @Test func aReceiptPassIsTheCauseOfKindReceipt() {
        let history = History()
        let entry = ReceiptInAppEntry(productId: Product.pass, transactionId: "1000000000000009", originalTransactionId: Self.otid, purchaseDate: Time.t0)
        history.add(Self.receipt([entry], created: Time.day(1)))
        let lines = CustomerHistory.timeline(
            state: history.state("otid:" + Self.otid), events: history.events, rules: testRules, until: Time.day(400))
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.cause?.kind == .receipt && $0.cause?.id == "1000000000000009" }, "\(lines)")
    }

    /// A receipt's one-time entry whose product the rules give `durationDays` is a pass
    /// (receipts do not say the type): its window's end is a moment of the timeline, as a
    /// signed pass's is.
    @Test func aReceiptPassEndsInTheTimeline() {
        let history = History()
        let entry = ReceiptInAppEntry(productId: Product.pass, transactionId: "1000000000000011", originalTransactionId: Self.otid, purchaseDate: Time.t0)
        history.add(Self.receipt([entry], created: Time.day(1)))
        let lines = CustomerHistory.timeline(
            state: history.state("otid:" + Self.otid), events: history.events, rules: testRules, until: Time.day(400))
        let cause = { (field: String) in HistoryCause(kind: .receipt, id: "1000000000000011", field: field) }
        #expect(lines == [
            HistoryLine(
                at: Time.t0, change: .entitlement(name: "pro", active: true, expiresDate: Time.day(7), productId: Product.pass),
                cause: cause("purchaseDate")),
            HistoryLine(
                at: Time.day(7), change: .entitlement(name: "pro", active: false, expiresDate: nil, productId: nil),
                cause: cause("expiresDate")),
        ])
    }
}
