import EntitlementCore
@testable import EventStore
import Testing

/// Customers made of more than one key, in a replay: the scan notes which rows each
/// takes (16 bytes a row, not the facts) and reads them again from its snapshot at
/// its end, a chunk of whole customers at a time.
@Suite struct ReplayGatheredTests {
    static let received: Int64 = 1_700_000_001_000

    /// Two merged customers, each an `otid:` key and its appTransactionId:
    /// `otid:1000` (seq 1) + `app-9` (seqs 2, 5); `otid:2000` (seq 3) + `app-5` (seq 4).
    static func mergedStore() throws -> EventStore {
        let store = try EventStore(path: StoreFixtures.temporaryDatabase(), hash: StoreFixtures.hash)
        let inputs: [VerifiedInput] = [
            StoreFixtures.transaction(id: "t1", original: "1000", app: nil, signed: 1_700_000_000_100),
            StoreFixtures.transaction(id: "t2", original: "1000", app: "app-9", signed: 1_700_000_000_200),
            StoreFixtures.transaction(id: "t3", original: "2000", app: nil, signed: 1_700_000_000_300),
            StoreFixtures.transaction(id: "t4", original: "2000", app: "app-5", signed: 1_700_000_000_400),
            StoreFixtures.transaction(id: "t5", original: "1000", app: "app-9", signed: 1_700_000_000_500),
        ]
        for (index, input) in inputs.enumerated() {
            _ = try store.append([.verified(input)], rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: received + Int64(index))
        }
        return store
    }

    /// The facts row filed under `key` at `seq`, as the log holds it.
    static func facts(_ store: EventStore, _ key: CustomerKey, _ seq: Int64) throws -> [UInt8] {
        let statement = try store.connection.prepare("SELECT facts FROM event_facts WHERE customer_key = ? AND seq = ?")
        try statement.bind(1, key)
        try statement.bind(2, seq)
        #expect(try statement.step(), "no facts under \(key) at \(seq)")
        return statement.withBlob(0) { Array($0) }
    }

    /// What `gathered` reads back: per chunk, its customers with their rows (seq, facts).
    static func chunks(_ gathered: inout GatheredCustomers, from store: EventStore, chunkEvents: Int)
        throws -> [[(key: CustomerKey, rows: [(Int64, [UInt8])])]]
    {
        var chunks: [[(key: CustomerKey, rows: [(Int64, [UInt8])])]] = []
        try store.connection.read {
            try gathered.read(from: store.connection, chunkEvents: chunkEvents) { chunk in
                chunks.append(
                    chunk.customers.map { customer in
                        (customer.key, customer.rows.map { row in (row.seq, Array(chunk.bytes[row.start..<(row.start + row.count)])) })
                    })
                #expect(chunk.events == chunk.customers.reduce(0) { $0 + $1.rows.count })
            }
        }
        return chunks
    }

    @Test func gatheredRowsAreReadBackWholeCustomersInKeyOrderTheirRowsInSeqOrder() throws {
        let store = try Self.mergedStore()
        var gathered = GatheredCustomers()
        // As the scan meets them: in key order, `otid:` keys last; a key's rows may go
        // to several customers (`app-9`'s seq 5 to `app-7` here, as a conflict would).
        gathered.append(seq: 4, filedUnder: "app-5", to: "app-5")
        gathered.append(seq: 2, filedUnder: "app-9", to: "app-9")
        gathered.append(seq: 5, filedUnder: "app-9", to: "app-7")
        gathered.append(seq: 1, filedUnder: "otid:1000", to: "app-9")
        gathered.append(seq: 3, filedUnder: "otid:2000", to: "app-5")
        let expected: [(CustomerKey, [(Int64, CustomerKey)])] = [
            ("app-5", [(3, "otid:2000"), (4, "app-5")]), ("app-7", [(5, "app-9")]), ("app-9", [(1, "otid:1000"), (2, "app-9")]),
        ]

        for (chunkEvents, sizes) in [(1, [1, 1, 1]), (3, [2, 1]), (100, [3])] {
            var copy = gathered
            let chunks = try Self.chunks(&copy, from: store, chunkEvents: chunkEvents)
            #expect(chunks.map(\.count) == sizes, "chunks of at least \(chunkEvents) events")
            let customers = chunks.flatMap { $0 }
            #expect(customers.map(\.key) == expected.map(\.0))
            for (customer, (key, rows)) in zip(customers, expected) {
                #expect(customer.rows.map(\.0) == rows.map(\.0), "\(key)")
                for ((seq, bytes), (_, filedUnder)) in zip(customer.rows, rows) {
                    #expect(bytes == (try Self.facts(store, filedUnder, seq)), "\(key) at \(seq)")
                }
            }
            // Read once: what was noted is let go of.
            #expect(try Self.chunks(&copy, from: store, chunkEvents: chunkEvents).isEmpty)
        }
    }

    @Test func aRowGoneFromTheLogIsDamageNotASilentGap() throws {
        let store = try Self.mergedStore()
        var gathered = GatheredCustomers()
        gathered.append(seq: 2, filedUnder: "app-9", to: "app-9")
        gathered.append(seq: 3, filedUnder: "app-9", to: "app-9")  // seq 3 is filed under otid:2000
        #expect(throws: StoreError.self) { _ = try Self.chunks(&gathered, from: store, chunkEvents: 100) }
    }

    @Test func aReplayOfMergedCustomersRebuildsWhatIngestBuilt() throws {
        let store = try Self.mergedStore()
        let before = try ["app-9", "app-5"].map { try #require(try store.projection(of: $0)) }
        #expect(before.map { $0.state.transactions.keys.sorted() } == [["t1", "t2", "t5"], ["t3", "t4"]])
        let report = try store.replay(rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.received, collectDiff: true)
        #expect(report.changed == 0 && report.diffs.isEmpty && report.customers == 2 && report.events == 5)
        let after = try ["app-9", "app-5"].map { try #require(try store.projection(of: $0)) }
        #expect(after.map(\.state) == before.map(\.state))
        #expect(after.map(\.lastEventSeq) == [5, 4])
        #expect(try store.projection(of: "otid:1000") == nil && store.projection(of: "otid:2000") == nil)
    }

    @Test func progressCountsTheLogsEventsAndReachesTheTotalOnlyAtTheEnd() throws {
        // Enough rows for a report in the middle of the scan (one every 16,384), over
        // customers of one key and the merged ones, read again at the end.
        let store = try Self.mergedStore()
        let inputs: [AppendItem] = (0..<16_400).map { index in
            .verified(StoreFixtures.transaction(id: "p\(index)", original: "\(10_000 + index)", app: "app-p\(index / 4)"))
        }
        _ = try store.append(inputs, rules: StoreFixtures.rules, rulesJSON: "{}", receivedAt: Self.received + 10)
        var reports: [ReplayProgress] = []
        let report = try store.replay(
            rules: StoreFixtures.rules, rulesJSON: "{}", now: Self.received, collectDiff: false, progress: { reports.append($0) })
        #expect(report.events == 16_405 && report.changed == 0)
        #expect(reports.count >= 2)
        #expect(reports.allSatisfy { $0.eventsTotal == 16_405 && $0.eventsDone <= $0.eventsTotal })
        #expect(reports.dropLast().allSatisfy { $0.eventsDone < $0.eventsTotal })
        #expect(reports.last?.eventsDone == 16_405 && reports.last?.customersDone == report.customers)
    }
}
