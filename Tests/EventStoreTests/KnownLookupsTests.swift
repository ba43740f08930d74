@testable import EventStore
import Testing

/// The memory of `customer_lookup` rows written: a row is written once per name and
/// customer, written again after a rollback, and the two kinds of name are apart.
@Suite struct KnownLookupsTests {
    @Test func aRowIsWrittenOnceAndAgainAfterARollback() {
        let known = KnownLookups()
        #expect(known.needsWriting(.originalTransactionId, value: "2000000000000001", customer: "app:1"))
        #expect(!known.needsWriting(.originalTransactionId, value: "2000000000000001", customer: "app:1"))
        // The same text as another kind of name, or under another customer: written.
        #expect(known.needsWriting(.appAccountToken, value: "2000000000000001", customer: "app:1"))
        #expect(known.needsWriting(.originalTransactionId, value: "2000000000000001", customer: "app:2"))
        known.committed()
        #expect(!known.needsWriting(.originalTransactionId, value: "2000000000000001", customer: "app:2"))
        #expect(!known.needsWriting(.appAccountToken, value: "2000000000000001", customer: "app:1"))

        // Written by a transaction that rolled back: not in the database, written again.
        #expect(known.needsWriting(.appAccountToken, value: "token-b", customer: "app:1"))
        known.forgetUncommitted()
        #expect(known.needsWriting(.appAccountToken, value: "token-b", customer: "app:1"))
        // What was committed before stays known.
        #expect(!known.needsWriting(.originalTransactionId, value: "2000000000000001", customer: "app:2"))
    }

    @Test func pastItsCapacityTheMemoryStartsAgain() {
        let known = KnownLookups(capacity: 3)
        for value in ["a", "b", "c"] { #expect(known.needsWriting(.appAccountToken, value: value, customer: "app:1")) }
        known.committed()
        #expect(!known.needsWriting(.appAccountToken, value: "c", customer: "app:1"))
        // The fourth name empties the memory: the first three are written again (INSERT OR IGNORE).
        #expect(known.needsWriting(.originalTransactionId, value: "d", customer: "app:1"))
        #expect(known.needsWriting(.appAccountToken, value: "a", customer: "app:1"))
        #expect(!known.needsWriting(.originalTransactionId, value: "d", customer: "app:1"))
    }
}
