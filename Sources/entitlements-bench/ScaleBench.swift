import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements-bench scale`: a big database of Apple-sized signed notifications
/// built through `Engine.ingest` (see ``ScalePlan``), kept for reuse, then every
/// read and write path measured on it.
enum ScaleBench {
    static let command = "scale"
    static let replayChildCommand = "__scale-replay-child"
    /// The moment the replay projects at: after every history the mode builds.
    static let replayNow = CivilTime.millis(year: 2030, month: 1, day: 1)

    static let help = """
        entitlements-bench scale --events N [--customers M] [--db PATH] [--reuse-db] [--queries Q] [--further K] [--only LIST] [--out PATH] [--stop-after S] [--smoke]

        Builds a database of N signed notifications (one event each; real x5c headers and
        nested JWS; renewals, refunds, upgrades, consumables, merging customers) over M
        customers (default N / 10) through Engine.ingest with 2 workers, at ingest's speed,
        then measures on it: bytes per event, query p50/p99 (warm, and with the page cache
        dropped), history, replay (time and peak RSS, in a child process),
        audit, a year of metrics, the ingest of K further notifications (default N / 50,
        2,000 to 20,000, to customers spread over the database, others at each run), and
        the change and lifecycle feeds with every expiry of the history due.

          --db PATH     where the database is kept (default bench-out/scale-N.sqlite), with
                        PATH.root.der (the root that signed it), PATH.root-K.der (the root of
                        each later run that signed some of it: a resumed build, a further
                        ingest) and PATH.plan.json (the plan, the months built) beside it
          --reuse-db    reuse the database at PATH when it was built for the same N and M;
                        a build stopped part-way (killed) resumes at its first month not
                        built, and the measurements follow
          --out PATH    results as JSON (default bench-out/scale-N.json)
          --only LIST   the stages measured, comma-separated (default all):
                        storage,query,history,metrics,audit,replay,due,ingest
          --stop-after S  stop the build after the plan's first S notifications, as a
                        kill would (to try resuming); nothing is measured
          --smoke       400 notifications over 40 customers, built in two runs (the first
                        stopped part-way, the second resuming): checks only, seconds
        """

    struct Options {
        var events = 0
        var customers: Int? = nil
        var db: String? = nil
        var reuse = false
        var queries = 20_000
        var further: Int? = nil
        var out: String? = nil
        var smoke = false
        /// Stop the build after the plan's first this many notifications (`--stop-after`).
        var stopAfter: Int? = nil
        /// The stages measured after the build (all when empty).
        var only: Set<String> = []
    }

    /// Drops the database's pages (its file and `-wal`) from the kernel's page cache
    /// (`posix_fadvise` `DONTNEED`, after writing back anything dirty); other files keep theirs.
    /// Linux only: elsewhere nothing is dropped (`false`).
    static func dropFromPageCache(_ path: String) -> Bool {
        #if !os(Linux)
        return false
        #else
        var dropped = false
        for file in [path, path + "-wal"] {
            let descriptor = open(file, O_RDONLY)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            _ = fdatasync(descriptor)
            if posix_fadvise(descriptor, 0, 0, Int32(POSIX_FADV_DONTNEED)) == 0, file == path { dropped = true }
        }
        return dropped
        #endif
    }

    /// Reads `path` through once, so that the kernel's page cache holds it.
    static func readThrough(_ path: String) {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Bytes this process has had read from storage (`read_bytes` of `/proc/self/io`), or 0.
    static func bytesReadFromDisk() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("read_bytes:") {
            return Int64(line.dropFirst("read_bytes:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    static func run(_ arguments: [String]) -> Int32 {
        var options = Options()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func string() -> String? {
                index += 1
                return index < arguments.count ? arguments[index] : nil
            }
            func number() -> Int? { string().flatMap { Int($0.replacingOccurrences(of: "_", with: "")) } }
            switch argument {
            case "--events": guard let n = number(), n >= 20 else { return usage() }; options.events = n
            case "--customers": guard let n = number(), n >= 1 else { return usage() }; options.customers = n
            case "--queries": guard let n = number(), n >= 10 else { return usage() }; options.queries = n
            case "--further": guard let n = number(), n >= 1 else { return usage() }; options.further = n
            case "--stop-after": guard let n = number(), n >= 1 else { return usage() }; options.stopAfter = n
            case "--db": guard let path = string() else { return usage() }; options.db = path
            case "--out": guard let path = string() else { return usage() }; options.out = path
            case "--only":
                guard let list = string() else { return usage() }
                options.only = Set(list.split(separator: ",").map(String.init))
                guard options.only.isSubset(of: stages) else { return usage() }
            case "--reuse-db": options.reuse = true
            case "--smoke": options.smoke = true
            case "--help", "-h": print(help); return 0
            default: return usage()
            }
            index += 1
        }
        if options.smoke {
            options.events = options.events == 0 ? 400 : min(options.events, 400)
            options.customers = min(options.customers ?? 40, 40)
            options.queries = min(options.queries, 200)
        }
        guard options.events > 0 else { return usage() }
        if options.smoke {
            // Built in two runs, each signing with its own PKI: the first stopped part-way
            // through a month, the second resuming it (the month's first notifications come
            // back duplicates), then measuring.
            options.db = options.db ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "scale-smoke-\(UUID().uuidString.prefix(8)).sqlite").path
            var first = options
            first.stopAfter = options.events * 2 / 5 + options.events / 40
            first.reuse = false
            guard ScaleBench.Run(options: first).run() == 0 else { return 1 }
            options.reuse = true
        }
        let bench = ScaleBench.Run(options: options)
        return bench.run()
    }

    /// The stages measured after the build, in their order.
    static let stages = ["storage", "query", "history", "metrics", "audit", "replay", "due", "ingest"]

    static func usage() -> Int32 {
        FileHandle.standardError.write(Data((help + "\n").utf8))
        return 2
    }

    /// The engine's configuration on the scale database: Production, revenue kept in
    /// USD, the benchmark's rules, trusting the given roots.
    static func configuration(roots: [[UInt8]]) -> EngineConfiguration {
        var configuration = EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .production,
            rootCertificatesDER: roots, rules: BenchRules.rules)
        configuration.revenue = RevenueSettings(reportingCurrency: "USD")
        return configuration
    }

    /// The roots kept beside the database at `path`: the one that signed it
    /// (`PATH.root.der`), then the one of each further ingest made on it (`PATH.root-K.der`).
    static func keptRoots(_ path: String) -> [[UInt8]] {
        var roots: [[UInt8]] = []
        guard let first = FileManager.default.contents(atPath: path + ".root.der") else { return roots }
        roots.append([UInt8](first))
        while let further = FileManager.default.contents(atPath: path + ".root-\(roots.count).der") { roots.append([UInt8](further)) }
        return roots
    }

    /// One run of the mode.
    struct Run {
        let options: Options
        let report = Report()
        let plan: ScalePlan
        let path: String
        let out: String
        let pki = TestPKI()

        init(options: Options) {
            self.options = options
            plan = ScalePlan(events: options.events, customers: options.customers ?? max(1, options.events / 10))
            let smokePath = FileManager.default.temporaryDirectory.appendingPathComponent("scale-smoke-\(UUID().uuidString.prefix(8)).sqlite").path
            path = options.db ?? (options.smoke ? smokePath : "bench-out/scale-\(options.events).sqlite")
            out = options.out ?? "bench-out/scale-\(options.events).json"
        }

        var rootPath: String { path + ".root.der" }
        var planPath: String { path + ".plan.json" }

        func run() -> Int32 {
            #if DEBUG
            let build = "debug"
            #else
            let build = "release"
            #endif
            let loadBefore = Machine.loadAverage
            for folder in [path, out] {
                try? FileManager.default.createDirectory(
                    atPath: URL(fileURLWithPath: folder).deletingLastPathComponent().path, withIntermediateDirectories: true)
            }
            report.section(
                "run",
                [
                    "command": .string((["entitlements-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")),
                    "build": .string(build), "smoke": .bool(options.smoke), "date": .string(ISO8601DateFormatter().string(from: Date())),
                    "loadBefore": .string(loadBefore), "events": .int(Int64(plan.events)), "customers": .int(Int64(plan.customers)),
                ])
            var roots = [pki.rootDER]
            var furtherRuns = 0
            var stopped = false
            stage("build") {
                let built = try buildOrReuse()
                roots += built.roots.filter { $0 != pki.rootDER }
                furtherRuns = built.furtherRuns
                stopped = built.stopped
            }
            // A stopped build is resumed by a later run: nothing to measure, nothing to remove.
            if stopped && report.failures.isEmpty { return 0 }
            guard report.failures.isEmpty else { return finish(build: build, loadBefore: loadBefore) }
            let configuration = ScaleBench.configuration(roots: roots)
            stage("storage") { try storage() }
            stage("query") { try query(configuration) }
            stage("history") { try history(configuration) }
            stage("metrics") { try metrics(configuration) }
            stage("audit") { try audit(configuration) }
            stage("replay") { try replay() }
            // The feeds before the further ingest: its renewals would put the expiries off.
            stage("due") { try due(configuration) }
            stage("ingest") {
                try furtherIngest(configuration, run: furtherRuns)
                // This run's root signed the further notifications: kept, so that a later
                // `--reuse-db` run's audit verifies them too.
                try? keepRoot()
                try? writePlan(furtherRuns: furtherRuns + 1)
            }
            return finish(build: build, loadBefore: loadBefore)
        }

        func stage(_ name: String, _ body: () throws -> Void) {
            guard name == "build" || options.only.isEmpty || options.only.contains(name) else { return }
            note("scale: \(name) ...")
            do { try body() } catch { report.failures.append("\(name): \(error)") }
        }

        func finish(build: String, loadBefore: String) -> Int32 {
            report.section("machine", ["loadBefore": .string(loadBefore), "loadAfter": .string(Machine.loadAverage), "cores": .int(Int64(Machine.cores))])
            print("")
            print(
                "entitlements-bench scale (\(build)) on \(Machine.cores) cores, \(Machine.cpuModel), \(Format.megabytes(Machine.memoryBytes)) memory; load \(loadBefore) before, \(Machine.loadAverage) after"
            )
            print("")
            print(report.table())
            print("")
            do {
                try Data((PrettyJSON.string(report.json()) + "\n").utf8).write(to: URL(fileURLWithPath: out))
                print("results: \(out)   database: \(path)")
            } catch {
                report.failures.append("writing \(out): \(error)")
            }
            if options.smoke { Storage.remove(path); removeSidecars() }
            for failure in report.failures { print("FAILED: \(failure)") }
            if report.failures.isEmpty && options.smoke { print("smoke: every stage of scale ran and checked out") }
            return report.failures.isEmpty ? 0 : 1
        }

        func removeSidecars() {
            try? FileManager.default.removeItem(atPath: path + "-head")
            for index in 0..<ScaleBench.keptRoots(path).count {
                try? FileManager.default.removeItem(atPath: index == 0 ? rootPath : path + ".root-\(index).der")
            }
            try? FileManager.default.removeItem(atPath: planPath)
        }

        // MARK: the database

        func writePlan(furtherRuns: Int) throws {
            try ScaleProgress(events: plan.events, customers: plan.customers, monthsBuilt: plan.eventsPerCustomer, furtherRuns: furtherRuns)
                .write(planPath)
        }

        // MARK: the measurements

        func storage() throws {
            let figures = try Storage.measure(path, columns: false)
            report.row(
                "storage", "database file: \(Format.count(Double(figures.events))) events",
                Format.megabytes(figures.fileBytes) + ", " + Format.count(figures.bytesPerEvent) + " B per event")
            let top = figures.objects.prefix(6).map { "\($0.name) \(Format.count(Double($0.bytes) / Double(max(1, figures.events)))) B" }
            if !top.isEmpty { report.row("storage", "  per event, largest tables and indexes", top.joined(separator: ", ")) }
            report.section(
                "storage",
                [
                    "events": .int(figures.events), "fileBytes": .int(figures.fileBytes), "bytesPerEvent": .double(figures.bytesPerEvent),
                    "contentBytesPerEvent": .double(figures.contentBytesPerEvent),
                    "objects": .array(figures.objects.map { ["name": .string($0.name), "bytes": .int($0.bytes)] }),
                ])
        }

        /// Customers drawn at random (a fixed seed).
        func sample(_ count: Int, seed: UInt64) -> [Int] {
            var random = SplitMix64(seed: seed)
            return (0..<count).map { _ in random.below(plan.customers) }
        }

        /// `count` distinct customers drawn at random (at most a tenth of them, so that
        /// most of their pages are read from disk after the page cache is dropped).
        func distinctSample(_ count: Int, seed: UInt64) -> [Int] {
            var random = SplitMix64(seed: seed)
            var seen = Set<Int>()
            let count = max(1, min(count, plan.customers / 10))
            while seen.count < count { seen.insert(random.below(plan.customers)) }
            return Array(seen).sorted { ($0 &* 2_654_435_761) % 1_000_003 < ($1 &* 2_654_435_761) % 1_000_003 }
        }

        static func percentile(_ sorted: [Double], _ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }

        /// Each call timed, in milliseconds, sorted.
        func latencies(_ customers: [Int], _ body: (Int) throws -> Void) rethrows -> [Double] {
            var out: [Double] = []
            out.reserveCapacity(customers.count)
            for customer in customers {
                let begin = Clock.nanoseconds()
                try body(customer)
                out.append(Double(Clock.nanoseconds() - begin) / 1e6)
            }
            return out.sorted()
        }

        func latencyRow(_ stage: String, _ figure: String, _ sorted: [Double], seconds: Double? = nil) -> JSONValue {
            let p50 = Self.percentile(sorted, 0.5)
            let p99 = Self.percentile(sorted, 0.99)
            var value = "p50 " + Format.fixed(p50 * 1000, 1) + " µs, p99 " + Format.fixed(p99 * 1000, 1) + " µs"
            if let seconds { value += ", " + Format.count(Double(sorted.count) / seconds) + " /s" }
            report.row(stage, figure, value)
            return [
                "calls": .int(Int64(sorted.count)), "p50Milliseconds": .double(p50), "p99Milliseconds": .double(p99),
                "maxMilliseconds": .double(sorted.last ?? 0), "perSecond": .double(seconds.map { Double(sorted.count) / $0 } ?? 0),
            ]
        }

        func query(_ configuration: EngineConfiguration) throws {
            let at = plan.end - 20 * 86_400_000
            func ask(_ engine: Engine, _ customer: Int) throws {
                guard case .customer = try engine.query(.appTransactionId(HistoryPlan.appTransactionId(customer)), at: at) else {
                    throw BenchFailure("query found no customer \(customer)")
                }
            }
            // Cold first, on a fresh engine: the database's pages dropped from the kernel's page
            // cache, then each query timed, and the bytes read from the disk counted.
            var section = JSONObject()
            let engine = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)
            if !options.smoke, ScaleBench.dropFromPageCache(path) {
                let before = ScaleBench.bytesReadFromDisk()
                let cold = try latencies(distinctSample(2_000, seed: 0xC01D)) { try ask(engine, $0) }
                let perQuery = Double(ScaleBench.bytesReadFromDisk() - before) / Double(max(cold.count, 1))
                var row = latencyRow("query", "Engine.query, the database's pages dropped from the page cache first, \(cold.count) distinct customers at random", cold)
                if case .object(var object) = row {
                    object["diskKibibytesPerQuery"] = .double(perQuery / 1024)
                    row = .object(object)
                }
                report.row("query", "— read from the disk per cold query", Format.fixed(perQuery / 1024, 1) + " KiB")
                section["cold"] = row
            } else {
                report.row("query", "Engine.query, page cache dropped", options.smoke ? "not measured in a smoke run" : "not measured: the page cache could not be dropped")
                section["cold"] = "not measured"
            }
            // Warm: the whole file in the kernel's page cache (read through once), then a
            // warm-up, then each query timed.
            if !options.smoke { ScaleBench.readThrough(path) }
            let warmPool = sample(options.queries, seed: 0x5EED)
            for customer in warmPool.prefix(2_000) { try ask(engine, customer) }
            let start = Clock.now()
            let cpu = Clock.threadCPU()
            let warm = try latencies(warmPool) { try ask(engine, $0) }
            let cpuSeconds = Clock.threadCPU() - cpu
            var warmRow = latencyRow(
                "query", "Engine.query, warm, \(Format.count(Double(plan.customers))) customers, 1 thread", warm, seconds: Clock.now() - start)
            // Per CPU-second: the time the measuring thread ran (system calls included), which
            // leaves out time spent descheduled on a busy machine.
            let perCPUSecond = Double(warm.count) / max(cpuSeconds, 1e-9)
            report.row("query", "— warm, per CPU-second (mean CPU per query)", Format.count(perCPUSecond) + " /s (" + Format.fixed(1e6 / perCPUSecond, 1) + " µs)")
            if case .object(var object) = warmRow {
                object["perCPUSecond"] = .double(perCPUSecond)
                warmRow = .object(object)
            }
            section["warm"] = warmRow
            // A file bigger than the memory is never whole in the page cache: what a long-running
            // service keeps there is what its queries read. The projections (table and index)
            // read last, so that they are what the page cache holds, then the same queries again.
            if !options.smoke {
                let reader = try Connection(path: path, mode: .readOnly)
                _ = try reader.scalarInt("SELECT sum(length(state)) FROM projections")
                _ = try reader.scalarInt("SELECT count(*) FROM (SELECT generation, customer_key FROM projections ORDER BY generation, customer_key)")
                for customer in warmPool.prefix(2_000) { try ask(engine, customer) }
                let cpuAgain = Clock.threadCPU()
                let again = try latencies(warmPool) { try ask(engine, $0) }
                let perCPUAgain = Double(again.count) / max(Clock.threadCPU() - cpuAgain, 1e-9)
                report.row(
                    "query", "— warm, the projections read last into the page cache, per CPU-second",
                    Format.count(perCPUAgain) + " /s (" + Format.fixed(1e6 / perCPUAgain, 1) + " µs; p50 "
                        + Format.fixed(again[again.count / 2] * 1000, 1) + " µs)")
                section["warmProjectionsLast"] = ["perCPUSecond": .double(perCPUAgain), "p50Milliseconds": .double(again[again.count / 2])]
            }
            report.section("query", .object(section))
        }

        func history(_ configuration: EngineConfiguration) throws {
            let engine = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)
            let customers = sample(min(options.queries, 2_000), seed: 0x4157)
            var entries = 0
            let start = Clock.now()
            let sorted = try latencies(customers) { customer in
                let answer = try engine.history(.appTransactionId(HistoryPlan.appTransactionId(customer)), until: plan.end)
                entries += answer.json().count
            }
            guard entries > 0 else { throw BenchFailure("history found no entries") }
            report.section(
                "history",
                latencyRow("history", "Engine.history of one customer (\(plan.eventsPerCustomer) events each), warm", sorted, seconds: Clock.now() - start))
        }

        func metrics(_ configuration: EngineConfiguration) throws {
            let engine = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)
            var times: [Double] = []
            var active: Int64 = 0
            for _ in 0..<3 {
                let start = Clock.now()
                let answer = try engine.metrics(from: MetricsBench.year2025.from, to: MetricsBench.year2025.to, interval: .month)
                times.append(Clock.now() - start)
                guard answer.lines.count == 12 else { throw BenchFailure("a year of monthly metrics gave \(answer.lines.count) lines") }
                active = answer.lines.map(\.activeSubscriptions).max() ?? 0
            }
            guard active > 0 else { throw BenchFailure("no active subscription in any month") }
            times.sort()
            report.row("metrics", "Engine.metrics, 2025 by month: median of 3", Format.fixed(times[1], 3) + " s")
            report.section("metrics", ["monthlySeconds": .array(times.map { .double($0) }), "mostActive": .int(active)])
        }

        func audit(_ configuration: EngineConfiguration) throws {
            let engine = try Engine(configuration: configuration, databasePath: path, mode: .readOnly)
            let start = Clock.now()
            let cpu = Clock.processCPU()
            let answer = try engine.audit()
            let seconds = Clock.now() - start
            let cpuSeconds = Clock.processCPU() - cpu
            guard answer.firstMismatch == nil else { throw BenchFailure("the audit found a mismatch: \(String(describing: answer.firstMismatch))") }
            report.row(
                "audit", "Engine.audit, \(Format.count(Double(answer.events))) events (hash chain, every JWS verified again)",
                Format.fixed(seconds, 1) + " s, " + Format.count(Double(answer.events) / seconds) + " events/s ("
                    + Format.count(Double(answer.events) / max(cpuSeconds, 1e-9)) + " per CPU-s)")
            report.section("audit", ["events": .int(answer.events), "seconds": .double(seconds), "cpuSeconds": .double(cpuSeconds)])
        }

        func replay() throws {
            let figures = try ReplayBench.measure(path: path, command: replayChildCommand)
            guard figures.changed == 0 else { throw BenchFailure("the replay changed \(figures.changed) customers") }
            report.row(
                "replay", "Engine.replay, \(Format.count(Double(figures.events))) events, \(Format.count(Double(figures.customers))) customers",
                Format.fixed(figures.seconds, 1) + " s, " + Format.count(figures.rate) + " events/s ("
                    + Format.count(Double(figures.events) / max(figures.cpuSeconds, 1e-9)) + " per CPU-s)")
            report.row("replay", "  peak RSS of the replaying process", Format.megabytes(figures.peakRSS))
            report.section(
                "replay",
                [
                    "events": .int(figures.events), "customers": .int(figures.customers), "seconds": .double(figures.seconds),
                    "cpuSeconds": .double(figures.cpuSeconds), "peakRSS": .int(figures.peakRSS), "baselineRSS": .int(figures.baselineRSS),
                ])
        }

        /// K further notifications (renewals and consumables of a later month, for
        /// customers spread over the whole database, others at each run), signed
        /// beforehand, then ingested through `Engine.ingest` with 2 workers.
        func furtherIngest(_ configuration: EngineConfiguration, run: Int) throws {
            let count = options.further ?? min(20_000, max(2_000, plan.events / 50))
            // Customers spread over the whole database, as many months as it takes. Each run
            // takes the customers next to the last run's: the same ones every run would give
            // them ever longer histories (each a notification more per run), and a database
            // measured more often would measure costlier customers.
            let perMonth = min(plan.customers, count)
            let months = (count + perMonth - 1) / perMonth
            let month = plan.eventsPerCustomer + run * months
            let shift = run % max(1, plan.customers / perMonth)
            let positions = (0..<count).map {
                (customer: ($0 % perMonth) * plan.customers / perMonth + shift, event: month + $0 / perMonth)
            }
            let documents = plan.signed(positions, pki: pki)
            let engine = try Engine(configuration: configuration, databasePath: path)
            // `BENCH_WRITER_CACHE_KIB=K` (and `BENCH_WRITER_MMAP=BYTES`): the writer's settings
            // this stage runs with, to compare them with the default in one build.
            let environment = ProcessInfo.processInfo.environment
            if let kibibytes = environment["BENCH_WRITER_CACHE_KIB"].flatMap({ Int($0) }) {
                try engine.setWriterCacheForBenchmark(
                    kibibytes: kibibytes, mapBytes: environment["BENCH_WRITER_MMAP"].flatMap { Int64($0) } ?? 0)
            }
            var appended = 0
            var index = 0
            let cacheBefore = engine.writerPageCacheForBenchmark
            let cpu = Clock.processCPU()
            let start = Clock.now()
            try engine.ingest(
                batches: {
                    guard index < documents.count else { return nil }
                    let end = min(index + 256, documents.count)
                    defer { index = end }
                    return Array(documents[index..<end])
                }, workers: 2, receivedAt: ScalePlan.receivedBy(event: month + months - 1),
                deliver: { results in for result in results where result.outcome == .appended { appended += 1 } })
            let seconds = Clock.now() - start
            let cpuSeconds = Clock.processCPU() - cpu
            guard appended == count else { throw BenchFailure("the further ingest appended \(appended) of \(count)") }
            report.row(
                "ingest", "Engine.ingest, 2 workers, \(Format.count(Double(count))) further notifications",
                Format.count(Double(count) / seconds) + " /s (" + Format.count(Double(count) / max(cpuSeconds, 1e-9)) + " per CPU-s)")
            let cacheAfter = engine.writerPageCacheForBenchmark
            let cache = (
                misses: cacheAfter.misses - cacheBefore.misses, hits: cacheAfter.hits - cacheBefore.hits,
                spills: cacheAfter.spills - cacheBefore.spills, writes: cacheAfter.writes - cacheBefore.writes)
            report.row(
                "ingest", "  the writer's pages per notification: read into its cache / found there / spilled before commit",
                [cache.misses, cache.hits, cache.spills].map { Format.fixed(Double($0) / Double(count), 1) }.joined(separator: " / "))
            report.row(
                "ingest", "  the writer's pages written per notification (the pages its commits changed)",
                Format.fixed(Double(cache.writes) / Double(count), 1))
            report.section(
                "ingest", [
                    "notifications": .int(Int64(count)), "seconds": .double(seconds), "cpuSeconds": .double(cpuSeconds), "month": .int(Int64(month)),
                    "writerPagesRead": .int(Int64(cache.misses)), "writerPagesFound": .int(Int64(cache.hits)),
                    "writerPagesSpilled": .int(Int64(cache.spills)), "writerPagesWritten": .int(Int64(cache.writes)),
                ])
        }

        /// The change and lifecycle feeds 45 days after the history's end: the first read
        /// records every expiry made due (one per subscriber not renewed), then reads with nothing due.
        func due(_ configuration: EngineConfiguration) throws {
            let now = plan.end + 45 * 86_400_000
            // The engine first: it migrates a database an older build made.
            let engine = try Engine(configuration: configuration, databasePath: path)
            let store = try EventStore(path: path, hash: { SHA256.hash($0) }, mode: .readOnly)
            let pending = try store.rawConnection.scalarInt("SELECT count(*) FROM customer_rows WHERE next_due_at <= \(now)") ?? -1
            var section = JSONObject()
            section["lifecycleDueRows"] = .int(pending)

            var start = Clock.now()
            let changesRecorded = try engine.recordDueChanges(now: now)
            let changesCatchUp = Clock.now() - start
            let changeCursor = try engine.lastChangeCursor()
            start = Clock.now()
            let lifecycleRecorded = try engine.recordDueLifecycle(now: now)
            let lifecycleCatchUp = Clock.now() - start
            let lifecycleCursor = try engine.lastLifecycleCursor()
            report.row(
                "changes", "Engine.changes, first read: \(Format.count(Double(changesRecorded))) time-driven changes recorded",
                Format.fixed(changesCatchUp, 2) + " s")
            report.row(
                "lifecycle",
                "Engine.lifecycle, first read: \(Format.count(Double(lifecycleRecorded))) lines recorded (\(Format.count(Double(pending))) customers due)",
                Format.fixed(lifecycleCatchUp, 2) + " s")
            var changesTimes: [Double] = []
            var lifecycleTimes: [Double] = []
            for call in 0..<50 {
                let later = now + Int64(call) * 1_000
                var begin = Clock.nanoseconds()
                let changes = try engine.changes(since: changeCursor, recordingDueAt: later)
                changesTimes.append(Double(Clock.nanoseconds() - begin) / 1e6)
                begin = Clock.nanoseconds()
                let lines = try engine.lifecycle(since: lifecycleCursor, recordingDueAt: later)
                lifecycleTimes.append(Double(Clock.nanoseconds() - begin) / 1e6)
                guard changes.isEmpty, lines.isEmpty else { throw BenchFailure("the feeds found new lines with nothing due") }
            }
            section["changesRecorded"] = .int(Int64(changesRecorded))
            section["changesCatchUpSeconds"] = .double(changesCatchUp)
            section["lifecycleRecorded"] = .int(Int64(lifecycleRecorded))
            section["lifecycleCatchUpSeconds"] = .double(lifecycleCatchUp)
            section["changesNothingDue"] = latencyRow("changes", "  then with nothing due", changesTimes.sorted())
            section["lifecycleNothingDue"] = latencyRow("lifecycle", "  then with nothing due", lifecycleTimes.sorted())
            report.section("due", .object(section))
        }
    }
}
