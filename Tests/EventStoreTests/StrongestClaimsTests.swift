import EntitlementCore
@testable import EventStore
import Testing
import TestSupport

/// An event's link claims are reduced in memory before they are recorded: two claims (a
/// notification's transaction and renewal info) are decided directly, more through a
/// table by originalTransactionId. Both give the same claims, in the same order.
@Suite("Strongest link claims")
struct StrongestClaimsTests {
    static func randomClaim(_ random: inout SplitMix64, seq: Int64) -> LinkClaim {
        let otids = ["2000000000000001", "2000000000000002"]
        let apps = ["app-1", "app-2", "otid:2000000000000009"]
        let header = String(repeating: "h", count: random.index(3) * 40)
        let raws: [String?] = [nil, header + "a.b.c", header + "a.b.d", header + "a.b.c0"]
        return LinkClaim(
            originalTransactionId: otids[random.index(otids.count)], appTransactionId: apps[random.index(apps.count)],
            signedDate: 1_700_000_000_000 + random.int(0...1),
            ref: RawRef(eventSeq: seq, slot: random.index(2) == 0 ? .nestedTransaction : .nestedRenewalInfo),
            raw: raws[random.index(raws.count)])
    }

    static func same(_ lhs: [LinkClaim], _ rhs: [LinkClaim]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0 == $1 && $0.ref == $1.ref && $0.raw == $1.raw }
    }

    @Test func twoClaimsAreDecidedAsTheTableDecidesThem() {
        var random = SplitMix64(seed: 0x57A0)
        var kept = (one: 0, both: 0)
        for _ in 0..<5_000 {
            let claims = [Self.randomClaim(&random, seq: 7), Self.randomClaim(&random, seq: 7)]
            let strongest = EventStore.strongest(claims)
            #expect(Self.same(strongest, EventStore.strongestByTable(claims)))
            if strongest.count == 1 { kept.one += 1 } else { kept.both += 1 }
        }
        // Both outcomes were met: one claim won, or both were kept (other ids, or raws missing).
        #expect(kept.one > 500 && kept.both > 500)
    }

    @Test func oneClaimOrNoneIsKeptAsItIs() {
        var random = SplitMix64(seed: 0x57A1)
        let claim = Self.randomClaim(&random, seq: 3)
        #expect(Self.same(EventStore.strongest([claim]), [claim]))
        #expect(EventStore.strongest([]).isEmpty)
    }

    @Test func theLaterSignedClaimWinsAndAMigrationYields() {
        let ref = RawRef(eventSeq: 1, slot: .nestedTransaction)
        let older = LinkClaim(originalTransactionId: "1", appTransactionId: "a", signedDate: 10, ref: ref, raw: "x")
        let newer = LinkClaim(originalTransactionId: "1", appTransactionId: "b", signedDate: 11, ref: ref, raw: "x")
        let migration = LinkClaim(originalTransactionId: "1", appTransactionId: "otid:9", signedDate: 12, ref: ref, raw: "x")
        #expect(EventStore.strongest([older, newer]).map(\.appTransactionId) == ["b"])
        #expect(EventStore.strongest([newer, older]).map(\.appTransactionId) == ["b"])
        #expect(EventStore.strongest([migration, older]).map(\.appTransactionId) == ["a"])
    }
}
