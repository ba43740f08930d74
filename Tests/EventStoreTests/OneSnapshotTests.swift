import EntitlementCore
import EventStore
import Testing

/// A reader's work in one snapshot (`withOneSnapshot`): what other connections commit
/// meanwhile is seen after it, never halfway through.
@Suite struct OneSnapshotTests {
    /// A writer with one customer's transaction, and a reader of the same file.
    static func writerAndReader() throws -> (writer: EventStore, reader: EventStore) {
        let path = StoreFixtures.temporaryDatabase()
        let writer = try EventStore(path: path, hash: StoreFixtures.hash)
        _ = try writer.append(
            [.verified(StoreFixtures.transaction(id: "t1", original: "o1", app: "app-1"))], rules: StoreFixtures.rules,
            rulesJSON: "{}", receivedAt: 1)
        let reader = try EventStore(path: path, hash: StoreFixtures.hash, mode: .readOnly)
        try reader.prepareForQueries()
        return (writer, reader)
    }

    static let at: Int64 = 1_701_000_000_000

    @Test func readsInsideSeeNoCommitMadeMeanwhileAndReadsAfterSeeIt() throws {
        let (writer, reader) = try Self.writerAndReader()
        try reader.withOneSnapshot { () throws(StoreError) in
            #expect(try reader.lastEventHead()?.seq == 1)
            #expect(try reader.view(of: "app-2", rules: StoreFixtures.rules, at: Self.at) == nil)
            // Another connection commits a second customer while the snapshot is held.
            _ = try writer.append(
                [.verified(StoreFixtures.transaction(id: "t2", original: "o2", app: "app-2"))], rules: StoreFixtures.rules,
                rulesJSON: "{}", receivedAt: 2)
            #expect(try reader.lastEventHead()?.seq == 1, "a statement after the commit read a newer snapshot")
            #expect(try reader.view(of: "app-2", rules: StoreFixtures.rules, at: Self.at) == nil)
            #expect(try reader.view(of: "app-1", rules: StoreFixtures.rules, at: Self.at)?.entitlements.map(\.name) == ["pro"])
        }
        #expect(try reader.lastEventHead()?.seq == 2)
        #expect(try reader.view(of: "app-2", rules: StoreFixtures.rules, at: Self.at)?.entitlements.map(\.name) == ["pro"])
    }

    /// The rules' key a snapshot answers is the one of its commit, even when new rules
    /// are recorded meanwhile.
    @Test func theActiveRulesKeyIsTheSnapshots() throws {
        let (writer, reader) = try Self.writerAndReader()
        let before = try reader.activeRulesKey()
        try reader.withOneSnapshot { () throws(StoreError) in
            #expect(try reader.activeRulesKey() == before)
            _ = try writer.replay(
                rules: Rules(version: "test-2", products: [:]), rulesJSON: #"{"version":"test-2"}"#, now: 3, collectDiff: false)
            #expect(try reader.activeRulesKey() == before)
            // The projection read is of the snapshot's generation: still the customer's.
            #expect(try reader.view(of: "app-1", rules: StoreFixtures.rules, at: Self.at) != nil)
        }
        let after = try reader.activeRulesKey()
        #expect(after.generation == before.generation + 1)
        #expect(after.version == "test-2")
    }

    /// A read transaction asked for inside (the audit's) runs in the snapshot held, and
    /// calls inside run in it too; the connection is back to a statement's own
    /// transaction afterwards.
    @Test func nestedReadsJoinTheSnapshot() throws {
        let (writer, reader) = try Self.writerAndReader()
        try reader.withOneSnapshot { () throws(StoreError) in
            _ = try writer.append(
                [.verified(StoreFixtures.transaction(id: "t2", original: "o2", app: "app-2"))], rules: StoreFixtures.rules,
                rulesJSON: "{}", receivedAt: 2)
            try reader.withOneSnapshot { () throws(StoreError) in
                #expect(try reader.lastEventHead()?.seq == 1)
            }
            #expect(try reader.lastEventHead()?.seq == 1)
            let report = try reader.audit(verify: { _, _ in nil })
            #expect(report.events == 1)
            #expect(try reader.lastEventHead()?.seq == 1, "the audit's read transaction ended the snapshot")
        }
        #expect(try reader.audit(verify: { _, _ in nil }).events == 2)
        #expect(try reader.lastEventHead()?.seq == 2)
    }

    /// An error thrown inside ends the snapshot as returning does.
    @Test func anErrorEndsTheSnapshot() throws {
        struct Stop: Error {}
        let (writer, reader) = try Self.writerAndReader()
        #expect(throws: StoreError.self) {
            try reader.withOneSnapshot { () throws(StoreError) in
                _ = try writer.append(
                    [.verified(StoreFixtures.transaction(id: "t2", original: "o2", app: "app-2"))], rules: StoreFixtures.rules,
                    rulesJSON: "{}", receivedAt: 2)
                throw StoreError(code: .corrupt, message: "stop")
            }
        }
        #expect(try reader.lastEventHead()?.seq == 2)
        #expect(try reader.activeRulesKey().generation == (try writer.activeRulesKey().generation))
    }
}
