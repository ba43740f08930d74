import EntitlementCore
import Entitlements
import Foundation
import TestPKI

/// Point lookups through ``Engine/query(_:at:)``: customers drawn at random (a fixed
/// seed), each call timed on its own; on one thread, then on two threads sharing
/// one engine (as a server's request handlers would).
enum QueryBench {
    struct Figures {
        var queries: Int
        var seconds: Double
        var rate: Double
        var p50: Double
        var p99: Double
        var max: Double
        var byOriginalTransactionIdRate: Double
        /// Two threads querying one engine at once.
        var twoThreadRate: Double
        var twoThreadP50: Double
        var twoThreadP99: Double
    }

    /// The moment queries ask about: mid-history, when some subscriptions are active.
    static let at: Int64 = TestPayloads.january2025 + 150 * 86_400_000

    static func measure(path: String, plan: HistoryPlan, queries: Int) throws -> Figures {
        let engine = try Engine(configuration: replayConfiguration, databasePath: path)
        var random = SplitMix64(seed: 0x5EED)
        let pool = (0..<min(queries, 65_536)).map { _ in HistoryPlan.appTransactionId(random.below(plan.customersPresent)) }
        // Warm up SQLite's page cache and the code paths.
        for id in pool.prefix(1_000) { _ = try engine.query(.appTransactionId(id), at: at) }

        /// Runs `count` queries from `offset` in the pool; their latencies in nanoseconds.
        @Sendable func run(_ engine: Engine, offset: Int, count: Int) throws -> [UInt64] {
            var latencies = [UInt64](repeating: 0, count: count)
            var missing = 0
            for index in 0..<count {
                let id = pool[(offset + index) % pool.count]
                let begin = Clock.nanoseconds()
                let answer = try engine.query(.appTransactionId(id), at: at)
                latencies[index] = Clock.nanoseconds() - begin
                if case .customer(let view) = answer {
                    if view.subscriptions.isEmpty { missing += 1 }
                } else {
                    missing += 1
                }
            }
            guard missing == 0 else { throw BenchFailure("\(missing) of \(count) queries found no customer or no subscription") }
            return latencies
        }
        func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]) / 1e6
        }

        let start = Clock.now()
        var latencies = try run(engine, offset: 0, count: queries)
        let seconds = Clock.now() - start
        latencies.sort()
        func percentile(_ p: Double) -> Double { percentile(latencies, p) }

        // Two threads on one engine, each with half the queries.
        let halves = UnsafeSendableBox<[Result<[UInt64], BenchFailure>]>([.success([]), .success([])])
        let twoStart = Clock.now()
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            do { halves.set(lane, Result<[UInt64], BenchFailure>.success(try run(engine, offset: lane * queries / 2, count: queries / 2))) } catch {
                halves.set(lane, Result<[UInt64], BenchFailure>.failure(error as? BenchFailure ?? BenchFailure("\(error)")))
            }
        }
        let twoSeconds = Clock.now() - twoStart
        let both = (try halves.value[0].get() + halves.value[1].get()).sorted()

        // By originalTransactionId (one lookup more), fewer calls.
        let otids = (0..<min(queries, 20_000)).map { _ in HistoryPlan.originalTransactionId(random.below(plan.customersPresent)) }
        let otidStart = Clock.now()
        for otid in otids {
            guard case .customer = try engine.query(.originalTransactionId(otid), at: at) else {
                throw BenchFailure("query by originalTransactionId \(otid) found nobody")
            }
        }
        let otidRate = Double(otids.count) / (Clock.now() - otidStart)
        return Figures(
            queries: queries, seconds: seconds, rate: Double(queries) / seconds, p50: percentile(0.50), p99: percentile(0.99),
            max: Double(latencies.last ?? 0) / 1e6, byOriginalTransactionIdRate: otidRate,
            twoThreadRate: Double(both.count) / twoSeconds, twoThreadP50: percentile(both, 0.50), twoThreadP99: percentile(both, 0.99))
    }

    /// The configuration used on the big database: the benchmark's rules; the root
    /// does not matter (nothing is verified), so the embedded Apple root stands.
    static var replayConfiguration: EngineConfiguration {
        EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox, rules: BenchRules.rules)
    }
}

/// Replay through ``Engine/replay(diff:now:progress:)`` in a child process (this
/// program re-run with a hidden subcommand), so that its peak RSS (`VmHWM`) is the
/// replay's alone, not the corpus building's.
enum ReplayBench {
    static let childCommand = "__replay-child"

    struct Figures {
        var events: Int64
        var customers: Int64
        var changed: Int64
        var seconds: Double
        var cpuSeconds: Double
        var systemSeconds: Double
        var secondsToLastProgress: Double
        var rate: Double
        var peakRSS: Int64
        var baselineRSS: Int64
    }

    /// In the child: replay and print one JSON line.
    static func child(path: String, configuration: EngineConfiguration = QueryBench.replayConfiguration, now: Int64 = QueryBench.at) -> Int32 {
        let baseline = Machine.statusBytes("VmHWM")
        do {
            let engine = try Engine(configuration: configuration, databasePath: path)
            let cpu = Clock.processUserSystem()
            let start = Clock.now()
            var lastProgress = start
            var eventsRead: Int64 = 0
            let report = try engine.replay(now: now) { progress in
                lastProgress = Clock.now()
                eventsRead = progress.eventsDone
            }
            let seconds = Clock.now() - start
            let end = Clock.processUserSystem()
            let cpuSeconds = end.user - cpu.user + end.system - cpu.system
            let peak = Machine.statusBytes("VmHWM")
            let line: JSONValue = [
                "events": .int(report.events), "customers": .int(report.customers), "changed": .int(report.changed),
                "seconds": .double(seconds), "cpuSeconds": .double(cpuSeconds), "systemSeconds": .double(end.system - cpu.system),
                "secondsToLastProgress": .double(lastProgress - start), "eventsAtLastProgress": .int(eventsRead), "vmHWM": .int(peak), "vmHWMBefore": .int(baseline),
            ]
            print(JSONWriter.string(line))
            return 0
        } catch {
            FileHandle.standardError.write(Data("replay child: \(error)\n".utf8))
            return 1
        }
    }

    /// In the parent: run the child and read its line.
    /// - Parameter command: the hidden subcommand that replays in the child.
    static func measure(path: String, command: String = childCommand) throws -> Figures {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Machine.executablePath)
        process.arguments = [command, path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchFailure("the replay child exited with \(process.terminationStatus)") }
        let text = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard let json = try? JSONParser().parse(text) else { throw BenchFailure("the replay child printed no JSON: \(text)") }
        func int(_ key: String) -> Int64 {
            switch json[key] {
            case .int(let value)?: return value
            case .double(let value)?: return Int64(value)
            default: return 0
            }
        }
        func double(_ key: String) -> Double {
            switch json[key] {
            case .int(let value)?: return Double(value)
            case .double(let value)?: return value
            default: return 0
            }
        }
        let seconds = double("seconds")
        return Figures(
            events: int("events"), customers: int("customers"), changed: int("changed"), seconds: seconds, cpuSeconds: double("cpuSeconds"),
            systemSeconds: double("systemSeconds"), secondsToLastProgress: double("secondsToLastProgress"),
            rate: seconds > 0 ? Double(int("events")) / seconds : 0, peakRSS: int("vmHWM"), baselineRSS: int("vmHWMBefore"))
    }
}
