import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation

/// `Engine.changes` on the query database (100,000 customers by default): the
/// first read records every expiry that became due since the database was built
/// (cause `time`); every read after it, with nothing due, is one indexed read
/// of the due list and one of the feed (specification section 8: under 50 ms).
enum ChangesBench {
    struct Figures {
        /// The first read: recording what became due, then reading from the last cursor.
        var catchUpSeconds: Double
        var recordedByCatchUp: Int
        /// Reads with nothing due, from the last cursor.
        var reads: Int
        var p50: Double
        var max: Double
        var customersFollowed: Int64
    }

    static func measure(path: String) throws -> Figures {
        let engine = try Engine(configuration: QueryBench.replayConfiguration, databasePath: path)
        let begin = Clock.now()
        let recorded = try engine.recordDueChanges()
        let last = try engine.lastChangeCursor()
        _ = try engine.changes(since: last)
        let catchUp = Clock.now() - begin
        var latencies: [Double] = []
        for _ in 0..<200 {
            let start = Clock.nanoseconds()
            let records = try engine.changes(since: last)
            latencies.append(Double(Clock.nanoseconds() - start) / 1_000_000)
            guard records.isEmpty else { throw BenchFailure("changes found \(records.count) new lines with nothing due") }
        }
        latencies.sort()
        let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        let followed = try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE answer IS NOT NULL") ?? 0
        return Figures(
            catchUpSeconds: catchUp, recordedByCatchUp: recorded, reads: latencies.count, p50: latencies[latencies.count / 2],
            max: latencies[latencies.count - 1], customersFollowed: followed)
    }
}
