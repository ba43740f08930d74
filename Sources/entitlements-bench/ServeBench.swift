import EntitlementCore
import Entitlements
import EntitlementsServer
import HTTPServer
import Foundation
import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements-bench serve`: `entitlements serve` over loopback against the same work
/// through the library directly. Notifications acknowledged per second and point queries per
/// second, with p50/p99 latency, at 1, 16 and 64 concurrent clients (connections, or threads
/// calling the library). Bounded: a fixed count of requests per measurement.
enum ServeBench {
    static let command = "serve"

    static let help = """
        entitlements-bench serve [--smoke] [--notifications N] [--queries N] [--load SECONDS [--rounds R] [--post-only]] [--out PATH]

        Loopback only. Signs N notifications (default 3000; --smoke 300), then for 1, 16 and 64
        clients: ingests a fresh third of them through Engine.ingest (one call per notification:
        synchronous, then async as a server handler would) and through POST /notifications (a
        keep-alive connection per client), and runs --queries point lookups (default 30000;
        --smoke 600) through Engine.query, GET /customers/{id}, and the same GET against a
        responder that only answers, with a real answer's bytes (a thread per connection, one
        recv and one send a request: the machine's bound on loopback). Prints rates and
        p50/p99 latency; with --out, JSON.

        --load SECONDS also signs 2N fresh notifications and, on the served database: GET
        /customers/{id} paced at 10,000/s by the bench's client and by h2load (p50/p99), and by
        h2load against the responder and on GET /health; Engine.query on 2 threads against wrk
        (2 threads, 2/16/64 connections, SECONDS each, alternated twice, best kept), beside wrk
        on GET /health (the server's HTTP without a query) and on the responder; and
        `entitlements ingest --workers 2` on N fresh notifications against wrk posting N others
        from 64 connections. The wrk rows need wrk on PATH, the h2load rows h2load (Debian's
        nghttp2-client); the command line row the release entitlements binary beside this one.
        --rounds R alternates the last two R times, each on N fresh notifications (signing 2N
        per round), and keeps the best of each; --post-only skips everything else (the served
        database gets the first N notifications through the library).
        """

    struct Measurement {
        var label: String
        var clients: Int
        var count: Int
        var seconds: Double
        var latencies: [UInt64]
        /// The process's CPU time over the measurement, where it was taken.
        var cpuSeconds: Double = 0
        var rate: Double { Double(count) / seconds }
        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1e6
        }
        var json: JSONValue {
            [
                "what": .string(label), "clients": .int(Int64(clients)), "count": .int(Int64(count)),
                "perSecond": .int(Int64(rate.rounded())), "p50ms": .double((percentile(0.5) * 1000).rounded() / 1000),
                "p99ms": .double((percentile(0.99) * 1000).rounded() / 1000),
            ]
        }
    }

    /// Runs `count` jobs over `clients` threads of their own (each with its own state from `setup`), timing each job.
    static func measure<State>(
        _ label: String, clients: Int, count: Int, setup: @escaping @Sendable (Int) throws -> State,
        job: @escaping @Sendable (inout State, Int) throws -> Void
    ) throws -> Measurement {
        let next = LockedBox(0)
        let results = LockedBox([[UInt64]](repeating: [], count: clients))
        let failure = LockedBox<String?>(nil)
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        for client in 0..<clients {
            ready.enter()
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                var state: State
                do { state = try setup(client) } catch {
                    failure.replace("\(error)")
                    ready.leave()
                    return
                }
                ready.leave()
                go.wait()
                var local: [UInt64] = []
                while true {
                    let index = next.take()
                    guard index < count else { break }
                    let begin = Clock.nanoseconds()
                    do { try job(&state, index) } catch {
                        failure.replace("\(error)")
                        break
                    }
                    local.append(Clock.nanoseconds() - begin)
                }
                results.set(client, local)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        ready.wait()
        let start = Clock.now()
        for _ in 0..<clients { go.signal() }
        done.wait()
        let seconds = Clock.now() - start
        if let message = failure.value { throw BenchFailure("\(label), \(clients) clients: \(message)") }
        let latencies = results.value.flatMap { $0 }.sorted()
        return Measurement(label: label, clients: clients, count: latencies.count, seconds: seconds, latencies: latencies)
    }

    static func run(_ arguments: [String]) -> Int32 {
        var smoke = false
        var notifications = 3000
        var queries = 30_000
        var out: String? = nil
        var load: Int? = nil
        var rounds = 1
        var postOnly = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func value() -> Int? {
                index += 1
                return index < arguments.count ? Int(arguments[index]) : nil
            }
            switch argument {
            case "--smoke": smoke = true
            case "--notifications": guard let n = value(), n >= 30 else { print(help); return 2 }; notifications = n
            case "--queries": guard let n = value(), n >= 3 else { print(help); return 2 }; queries = n
            case "--load": guard let n = value(), n >= 1 else { print(help); return 2 }; load = n
            case "--rounds": guard let n = value(), n >= 1 else { print(help); return 2 }; rounds = n
            case "--post-only": postOnly = true
            case "--out":
                index += 1
                guard index < arguments.count else { print(help); return 2 }
                out = arguments[index]
            case "--help", "-h": print(help); return 0
            default: print(help); return 2
            }
            index += 1
        }
        if smoke {
            notifications = min(notifications, 300)
            queries = min(queries, 600)
        }
        do {
            if postOnly && load == nil { print(help); return 2 }
            return try bench(notifications: notifications, queries: queries, load: load, rounds: rounds, postOnly: postOnly, out: out)
        } catch {
            note("entitlements-bench serve: \(error)")
            return 1
        }
    }

    static func bench(notifications: Int, queries: Int, load: Int?, rounds: Int, postOnly: Bool, out: String?) throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-bench-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // With --load, 2N more a round: the later months of the same customers.
        let signed = load == nil ? notifications : (1 + 2 * rounds) * notifications
        note("serve bench: signing \(signed) notifications ...")
        let corpus = Corpus(count: signed, customers: max(1, notifications / 3))
        let allBodies = corpus.samples.map { Array($0.body.utf8) }
        let bodies = Array(allBodies[..<notifications])
        let library = try Engine(configuration: corpus.configuration, databasePath: folder + "/library.sqlite")
        // The async API, which groups the commits of calls made together (what an embedding server calls).
        let asyncLibrary = try Engine(configuration: corpus.configuration, databasePath: folder + "/library-async.sqlite")
        let served = try Engine(configuration: corpus.configuration, databasePath: folder + "/served.sqlite")
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        var settings = ServeSettings(listen: .init(host: "127.0.0.1", port: 0))
        // Every client of the benchmark is 127.0.0.1: a run's connections may overlap the last run's closing ones.
        settings.maxConnectionsPerClient = 256
        let server = try Server(engine: served, settings: settings, log: AccessLog(fileDescriptor: devNull))
        let port = server.address.port
        let serverThread = Thread { try? server.run() }
        serverThread.start()
        defer { server.stop() }

        var results: [Measurement] = []
        let levels = postOnly ? [] : [1, 16, 64]
        if postOnly {
            for start in stride(from: 0, to: bodies.count, by: 256) {
                _ = try served.ingest(bodies[start..<min(bodies.count, start + 256)].map { InputBytes(bytes: $0) }, workers: 2)
            }
        }
        let slice = bodies.count / 3
        for (level, clients) in levels.enumerated() {
            let part = Array(bodies[(level * slice)..<((level + 1) * slice)])
            let direct = try measure("notifications, library", clients: clients, count: part.count, setup: { _ in () }) { _, index in
                let result = try library.ingest([InputBytes(bytes: part[index])], workers: 1)
                guard result.first?.outcome == .appended else { throw BenchFailure("not appended: \(result)") }
            }
            let grouped = try measure("notifications, library async", clients: clients, count: part.count, setup: { _ in () }) { _, index in
                let body = InputBytes(bytes: part[index])
                let result = try runBlocking { try await asyncLibrary.ingest([body]) }
                guard result.first?.outcome == .appended else { throw BenchFailure("not appended: \(result)") }
            }
            let http = try measure(
                "notifications, HTTP", clients: clients, count: part.count, setup: { _ in try BenchClient(port: port) }
            ) { client, index in
                let (status, body) = try client.exchange("POST", "/notifications", body: part[index])
                guard status == 200, body.contains(Array(#""result":"appended""#.utf8)) else {
                    throw BenchFailure("HTTP \(status): \(String(decoding: body, as: UTF8.self))")
                }
            }
            results += [direct, grouped, http]
            note(
                "  \(clients) clients: library \(Int(direct.rate))/s, library async \(Int(grouped.rate))/s, HTTP \(Int(http.rate))/s notifications acknowledged")
        }
        let customers = corpus.plan.customersPresent
        let ids = (0..<customers).map { HistoryPlan.appTransactionId($0) }
        let paths = ids.map { "/customers/" + $0 }
        // The machine's bound: a responder that does nothing but answer, with the bytes of a real answer.
        var responder: LoopbackResponder? = nil
        if !postOnly {
            let (status, answer) = try BenchClient(port: port).exchange("GET", paths[0], body: nil)
            guard status == 200 else { throw BenchFailure("GET \(paths[0]): HTTP \(status)") }
            responder = try LoopbackResponder(body: answer)
        }
        defer { responder?.stop() }
        for clients in levels {
            let direct = try measure("queries, library", clients: clients, count: queries, setup: { _ in () }) { _, index in
                guard case .customer = try library.query(.appTransactionId(ids[index % ids.count])) else { throw BenchFailure("not found") }
            }
            /// The lookups as GETs to `port`, a keep-alive connection per client.
            func gets(_ label: String, port: Int) throws -> Measurement {
                try measure(label, clients: clients, count: queries, setup: { _ in try BenchClient(port: port) }) { client, index in
                    let (status, _) = try client.exchange("GET", paths[index % paths.count], body: nil)
                    guard status == 200 else { throw BenchFailure("\(label): HTTP \(status)") }
                }
            }
            let http = try gets("queries, HTTP", port: port)
            results += [direct, http]
            guard let responder else { continue }
            let bound = try gets("queries, responder", port: responder.port)
            results.append(bound)
            note("  \(clients) clients: library \(Int(direct.rate))/s, HTTP \(Int(http.rate))/s, responder \(Int(bound.rate))/s queries")
        }
        let batches = server.ingestStatistics
        var loadRows: [ServeLoadBench.Row] = []
        if let load {
            note("serve bench: load from wrk and the paced client, \(load) s a measurement ...")
            loadRows = try ServeLoadBench.run(
                server: server, engine: served, port: port, responder: responder, ids: ids, freshBodies: Array(allBodies[notifications...]), corpus: corpus,
                folder: folder, seconds: load, rounds: rounds, postOnly: postOnly)
        }

        print("what                          clients      count     per s   p50 ms   p99 ms")
        for m in results {
            print(
                m.label.padding(toLength: 28, withPad: " ", startingAt: 0) + String(format: " %8d %10d %9.0f %8.3f %8.3f", m.clients, m.count, m.rate, m.percentile(0.5), m.percentile(0.99)))
        }
        let librarySingle = results.first { $0.label == "queries, library" && $0.clients == 1 }?.rate ?? 0
        let httpBest = results.filter { $0.label == "queries, HTTP" }.map(\.rate).max() ?? 0
        let ratio = librarySingle > 0 ? httpBest / librarySingle : 0
        if !postOnly {
            print(String(format: "queries over HTTP (best of 1/16/64 connections) / library on one thread: %.2f (target >= 0.50)", ratio))
        }
        print("HTTP ingest: \(batches.items) items committed in \(batches.batches) batches")
        for row in loadRows { print(row.what + ": " + row.value) }
        if let out {
            let json: JSONValue = [
                "notifications": .int(Int64(notifications)), "queries": .int(Int64(queries)), "cores": .int(Int64(Machine.cores)),
                "results": .array(results.map(\.json)), "httpQueriesOverLibrarySingleThread": .double((ratio * 100).rounded() / 100),
                "httpIngestBatches": .int(Int64(batches.batches)), "httpIngestItems": .int(Int64(batches.items)),
                "load": .array(loadRows.map { row -> JSONValue in ["what": .string(row.what), "value": .string(row.value), "figures": row.json] }),
            ]
            try Data((JSONWriter.string(json) + "\n").utf8).write(to: URL(fileURLWithPath: out))
        }
        return 0
    }
}

/// A keep-alive HTTP/1.1 client on a loopback socket, reading answers by Content-Length.
/// Used by one thread at a time (made on one, handed to the thread that uses it).
final class BenchClient: @unchecked Sendable {
    let fd: Int32
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var pending: [UInt8] = []

    init(port: Int) throws {
        fd = SystemCalls.socket(family: AF_INET)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw BenchFailure("cannot connect to 127.0.0.1:\(port)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends all of `bytes` on `fd`; false when the connection fails first.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { SystemCalls.send(fd, $0.baseAddress! + offset, bytes.count - offset) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    func exchange(_ method: String, _ path: String, body: [UInt8]?) throws -> (Int, [UInt8]) {
        var request = Array("\(method) \(path) HTTP/1.1\r\nHost: bench\r\n".utf8)
        if let body { request += Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body } else { request += [13, 10] }
        guard Self.sendAll(fd, request) else { throw BenchFailure("send failed") }
        while true {
            if let end = headEnd() {
                let head = String(decoding: pending[..<end], as: UTF8.self)
                let status = Int(head.split(separator: " ", maxSplits: 2)[1]) ?? 0
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                while pending.count < end + 4 + length { try fill() }
                let body = Array(pending[(end + 4)..<(end + 4 + length)])
                pending.removeFirst(end + 4 + length)
                return (status, body)
            }
            try fill()
        }
    }

    private func headEnd() -> Int? {
        guard pending.count >= 4 else { return nil }
        for index in 0...(pending.count - 4) where pending[index] == 13 && pending[index + 1] == 10 && pending[index + 2] == 13 && pending[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill() throws {
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { throw BenchFailure("connection closed") }
        pending += buffer[0..<count]
    }
}

/// A value behind a lock, shared by the benchmark's client threads.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
    func update<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&stored)
    }
    func replace(_ newValue: T) { update { $0 = newValue } }
    func set<E>(_ index: Int, _ element: E) where T == [E] { update { $0[index] = element } }
}

extension LockedBox where T == Int {
    /// The current value, incremented.
    func take() -> Int { update { value in defer { value += 1 }; return value } }
}
