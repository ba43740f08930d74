import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

/// `Engine.metrics` and `Engine.revenue` (specification section 14) on a database of
/// Production subscriptions: a year of monthly and of daily metrics from the revenue facts
/// kept per customer, the same derived from the log when none are kept, and a month's ledger.
enum MetricsBench {
    struct Figures {
        var events: Int
        var customers: Int
        var buildSeconds: Double
        /// Seconds of each call, sorted.
        var monthly: [Double]
        /// Seconds of the first call after the database was written (the ingest keeps
        /// each customer's revenue facts, so it reads them as later calls do).
        var firstMonthly: Double
        var daily: [Double]
        /// A year of monthly metrics with no kept facts (derived from the log, read-only engine).
        var monthlyFromLog: Double
        var ledgerMonth: Double
        var ledgerLines: Int
        /// The figures of the year's last month, to show what was computed.
        var lastMonth: MetricsLine
    }

    /// 2025-01-01 and 2026-01-01.
    static let year2025 = (from: TestPayloads.january2025, to: CivilTime.millis(year: 2026, month: 1, day: 1))

    static func measure(path: String, corpus: Corpus, events: Int, customers: Int, calls: Int = 3) throws -> Figures {
        let plan = HistoryPlan(total: events, customers: customers, environment: "Production")
        let built = try BigDatabase.build(path: path, plan: plan, header: .compact, pki: corpus.pki, progress: { _ in })
        var configuration = EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .production,
            rootCertificatesDER: [corpus.pki.rootDER], rules: BenchRules.rules)
        configuration.revenue = RevenueSettings(reportingCurrency: "USD")
        let engine = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)

        func timed(_ body: () throws -> Void) rethrows -> Double {
            let start = Clock.now()
            try body()
            return Clock.now() - start
        }
        var monthly: [Double] = []
        var lastMonth = MetricsLine(from: 0, to: 0)
        for _ in 0..<calls {
            monthly.append(try timed {
                let answer = try engine.metrics(from: year2025.from, to: year2025.to, interval: .month)
                guard answer.lines.count == 12 else { throw BenchFailure("a year of monthly metrics gave \(answer.lines.count) lines") }
                lastMonth = answer.lines.last!
                guard answer.lines.contains(where: { $0.activeSubscriptions > 0 }) else { throw BenchFailure("no active subscription in any month") }
            })
        }
        var daily: [Double] = []
        for _ in 0..<calls {
            daily.append(try timed {
                let answer = try engine.metrics(from: year2025.from, to: year2025.to, interval: .day)
                guard answer.lines.count == 365 else { throw BenchFailure("a year of daily metrics gave \(answer.lines.count) lines") }
            })
        }
        var ledgerLines = 0
        let ledgerMonth = try timed {
            ledgerLines = try engine.revenue(from: year2025.from, to: CivilTime.millis(year: 2025, month: 2, day: 1)).lines.count
        }
        // Without kept facts: every customer derived from its state and events.
        let writer = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
        try writer.rawConnection.execute("UPDATE customer_rows SET revenue_seq = NULL, revenue_facts = NULL")
        let fresh = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)
        let fromLog = try timed {
            let answer = try fresh.metrics(from: year2025.from, to: year2025.to, interval: .month)
            guard answer.lines.last == lastMonth else { throw BenchFailure("metrics derived from the log differ from the kept facts' figures") }
        }
        return Figures(
            events: built.events, customers: built.customers, buildSeconds: built.seconds, monthly: monthly.sorted(), firstMonthly: monthly[0],
            daily: daily.sorted(), monthlyFromLog: fromLog, ledgerMonth: ledgerMonth, ledgerLines: ledgerLines, lastMonth: lastMonth)
    }
}
