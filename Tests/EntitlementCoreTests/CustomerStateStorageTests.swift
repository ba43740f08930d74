import Testing

@testable import EntitlementCore

/// A customer's state keeps its fields in one box that its copies share until one of them
/// changes: each copy still behaves as a value (what one copy changes, no other sees), and
/// equality and hashing are those of the fields, whichever boxes hold them.
@Suite struct CustomerStateStorageTests {
    static func filled() -> CustomerState {
        let history = AccountTokenTransferTests.history()
        return history.state()
    }

    @Test func aCopyChangedLeavesTheOriginalAsItWas() throws {
        let original = Self.filled()
        #expect(!original.transactions.isEmpty && !original.renewalInfos.isEmpty && original.accountToken != nil)
        var copy = original
        #expect(copy == original)
        // In place, through a dictionary of the copy: the original keeps its own.
        let id = try #require(copy.transactions.keys.first)
        copy.transactions[id] = nil
        copy.renewalInfos[copy.renewalInfos.keys.first!]!.removeAll()
        copy.consentRescindedAt = 5
        copy.environments.insert(.xcode)
        copy.eventNeeds = nil
        #expect(original.transactions[id] != nil)
        #expect(original.renewalInfos.values.allSatisfy { !$0.isEmpty })
        #expect(original.consentRescindedAt == nil && !original.environments.contains(.xcode) && original.eventNeeds != nil)
        #expect(copy != original)
        // The original is unchanged as a whole: equal to a state built again from the same events.
        #expect(original == Self.filled())
    }

    @Test func equalFieldsInDifferentBoxesAreEqualAndHashAlike() {
        let a = Self.filled()
        var b = Self.filled()
        #expect(a == b && a.hashValue == b.hashValue)
        b.key = "other"
        #expect(a != b)
        b.key = a.key
        #expect(a == b && a.hashValue == b.hashValue)
        // Every field takes part: one changed at a time makes the states differ.
        var changes: [(inout CustomerState) -> Void] = [
            { $0.transactions.removeAll() }, { $0.renewalInfos.removeAll() }, { $0.appTransaction = nil },
            { $0.accountToken = nil }, { $0.lastNotification = nil }, { $0.environments = [.localTesting] },
            { $0.usages["u"] = nil }, { $0.consentRescindedAt = 1 }, { $0.operatorRecords["o"] = nil }, { $0.eventNeeds = nil },
        ]
        changes.removeAll { change in
            var state = a
            change(&state)
            return state == a  // a field already at that value: no difference to see
        }
        #expect(changes.count >= 6)
        for change in changes {
            var state = a
            change(&state)
            #expect(state != a)
        }
    }
}
