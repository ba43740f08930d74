import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements-bench serve --load`: the running server driven by a load generator that is
/// not the engine's code (`wrk`), side by side with the library on the same database and
/// build, and a paced client for latency at a fixed rate.
///
/// - Queries: `Engine.query` on two threads against `wrk` `GET /customers/{id}` (ids rotated
///   by a Lua script), alternated, the best round of each kept; the server's CPU per request.
/// - Latency at a fixed rate: the bench's own paced client, its latency counted from the
///   moment each request was due (a late request counts its wait).
/// - Notifications: `entitlements ingest --workers 2` on a file of fresh notifications against
///   `wrk` posting as many other fresh ones from 64 connections to `POST /notifications`.
enum ServeLoadBench {
    struct Row {
        var what: String
        var value: String
        var json: JSONValue
    }

    /// A `wrk` run's figures.
    struct WrkResult {
        var requests: Int
        var seconds: Double
        var rate: Double
        var p50ms: Double
        var p99ms: Double
        var errors: Int
        var serverCPUSeconds: Double
    }

    static var wrkPath: String? { onPath("wrk") }
    static var h2loadPath: String? { onPath("h2load") }

    /// The executable `name` in a folder of `PATH`, or `nil`.
    static func onPath(_ name: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Rotates over the ids in the file `args[1]`, each thread from its own place.
    static let queryScript = """
        local paths = {}
        local count = 0
        local next = 1
        init = function(args)
          for line in io.lines(args[1]) do
            count = count + 1
            paths[count] = wrk.format("GET", "/customers/" .. line)
          end
          next = math.random(count)
        end
        request = function()
          next = next % count + 1
          return paths[next]
        end
        """

    /// `GET /health` on every request: the server's HTTP without a query.
    static let healthScript = """
        request = function()
          return wrk.format("GET", "/health")
        end
        """

    /// Posts each line of the file `args[1]` once, the threads sharing the lines (thread `i` of
    /// `n` takes lines `i`, `i + n`, ...); a thread out of lines asks `GET /health`, and stops once
    /// every one of its notifications is answered.
    static let notificationScript = """
        local threads = 0
        setup = function(thread)
          thread:set("index", threads)
          threads = threads + 1
        end
        local bodies = {}
        local count = 0
        local sent = 0
        local answered = 0
        init = function(args)
          local n = tonumber(args[2])
          local line_number = 0
          for line in io.lines(args[1]) do
            if line_number % n == index then
              count = count + 1
              bodies[count] = wrk.format("POST", "/notifications", {["Content-Type"] = "application/json"}, line)
            end
            line_number = line_number + 1
          end
        end
        local started = false
        request = function()
          -- wrk calls the first thread's request() once to check it, before any connection:
          -- every thread's first request is one that may be lost.
          if not started then
            started = true
            return wrk.format("GET", "/health")
          end
          sent = sent + 1
          if sent <= count then return bodies[sent] end
          return wrk.format("GET", "/health")
        end
        response = function(status, headers, body)
          if string.find(body, '"result"', 1, true) then
            answered = answered + 1
            if not string.find(body, '"appended"', 1, true) then io.stderr:write("not appended: " .. body .. "\\n") end
          end
          if answered >= count then wrk.thread:stop() end
        end
        """

    /// Runs `wrk` with `script` and its arguments; its figures and the server's CPU meanwhile.
    /// With `until`, wrk is interrupted (SIGINT: it reports and exits) as soon as `until` says
    /// so, polled every millisecond: wrk itself always runs its whole duration.
    static func wrk(
        _ wrk: String, port: Int, threads: Int, connections: Int, seconds: Int, script: String, arguments: [String],
        until: (() -> Bool)? = nil
    ) throws -> WrkResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrk)
        process.arguments =
            ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--timeout", "30s", "--latency", "-s", script, "http://127.0.0.1:\(port)", "--"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        let output = LockedBox(Data())
        let reading = DispatchGroup()
        reading.enter()
        Thread {
            output.replace(pipe.fileHandleForReading.readDataToEndOfFile())
            reading.leave()
        }.start()
        let cpu = Clock.processCPU()
        try process.run()
        if let until {
            while process.isRunning && !until() { usleep(1000) }
            if process.isRunning { process.interrupt() }
        }
        process.waitUntilExit()
        reading.wait()
        let serverCPU = Clock.processCPU() - cpu
        let text = String(decoding: output.value, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw BenchFailure("wrk exited \(process.terminationStatus): \(text)") }
        return try parse(text, serverCPUSeconds: serverCPU)
    }

    /// `wrk --latency`'s text: "N requests in Xs", the 50 % and 99 % lines, errors.
    static func parse(_ output: String, serverCPUSeconds: Double) throws -> WrkResult {
        func duration(_ text: Substring) -> Double? {
            for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)] where text.hasSuffix(suffix) {
                return Double(text.dropLast(suffix.count)).map { $0 * scale }
            }
            return nil
        }
        var result = WrkResult(requests: 0, seconds: 0, rate: 0, p50ms: 0, p99ms: 0, errors: 0, serverCPUSeconds: serverCPUSeconds)
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count >= 4, words[1] == "requests", words[2] == "in" {
                result.requests = Int(words[0]) ?? 0
                result.seconds = (duration(words[3].split(separator: ",")[0]) ?? 0) / 1000
            } else if words.count == 2, words[0] == "50%" {
                result.p50ms = duration(words[1]) ?? 0
            } else if words.count == 2, words[0] == "99%" {
                result.p99ms = duration(words[1]) ?? 0
            } else if line.contains("Non-2xx or 3xx responses:") || line.contains("Socket errors:") {
                result.errors += words.compactMap { Int($0.filter(\.isNumber)) }.reduce(0, +)
            }
        }
        guard result.requests > 0, result.seconds > 0 else { throw BenchFailure("cannot read wrk's output: \(output)") }
        result.rate = Double(result.requests) / result.seconds
        return result
    }

    /// Requests at `rate` per second over `connections` keep-alive connections for `seconds`,
    /// each connection sending on its own schedule; latency counted from when a request was due.
    static func paced(port: Int, paths: [String], rate: Int, connections: Int, seconds: Double) throws -> ServeBench.Measurement {
        let interval = UInt64(Double(connections) / Double(rate) * 1e9)
        let perConnection = Int(seconds * Double(rate)) / connections
        let start = Clock.nanoseconds() + 50_000_000
        let results = LockedBox([[UInt64]](repeating: [], count: connections))
        let failure = LockedBox<String?>(nil)
        let done = DispatchGroup()
        for connection in 0..<connections {
            done.enter()
            let client = try BenchClient(port: port)
            let thread = Thread {
                defer { done.leave() }
                var local: [UInt64] = []
                local.reserveCapacity(perConnection)
                // Spread the connections' schedules evenly over one interval.
                let first = start + interval * UInt64(connection) / UInt64(connections)
                for index in 0..<perConnection {
                    let due = first + UInt64(index) * interval
                    var now = Clock.nanoseconds()
                    if now < due {
                        var wait = timespec(tv_sec: Int(due - now) / 1_000_000_000, tv_nsec: Int(due - now) % 1_000_000_000)
                        nanosleep(&wait, nil)
                        now = Clock.nanoseconds()
                    }
                    do {
                        let (status, _) = try client.exchange("GET", paths[(connection * 7919 + index) % paths.count], body: nil)
                        guard status == 200 else { throw BenchFailure("HTTP \(status)") }
                    } catch {
                        failure.replace("\(error)")
                        return
                    }
                    local.append(Clock.nanoseconds() - due)
                }
                results.set(connection, local)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        let elapsed = Double(Clock.nanoseconds() - start) / 1e9
        if let message = failure.value { throw BenchFailure("paced client: \(message)") }
        let latencies = results.value.flatMap { $0 }.sorted()
        return ServeBench.Measurement(
            label: "queries, paced \(rate)/s", clients: connections, count: latencies.count, seconds: elapsed, latencies: latencies)
    }

    /// The row of a paced run of `request` (`by` the load generator, `nil` for the bench's own client).
    static func pacedRow(
        _ run: ServeBench.Measurement, rate: Int, by generator: String?, of server: String? = nil, request: String = "GET /customers/{id}"
    ) -> Row {
        let by = generator.map { " by \($0)" } ?? ""
        let of = server.map { ", \($0)" } ?? ""
        note("  \(request) paced \(rate)/s\(by)\(of): p99 \(String(format: "%.3f", run.percentile(0.99))) ms")
        return Row(
            what: "\(request) paced at \(rate)/s\(by)\(of), \(run.clients) connections: achieved, p50 / p99 / p99.9 / max",
            value: String(
                format: "%.0f /s, %.3f / %.3f / %.3f / %.3f ms", run.rate, run.percentile(0.5), run.percentile(0.99), run.percentile(0.999),
                Double(run.latencies.last ?? 0) / 1e6),
            json: [
                "rate": .int(Int64(rate)), "achieved": .int(Int64(run.rate.rounded())), "p50ms": .double(run.percentile(0.5)),
                "p99ms": .double(run.percentile(0.99)), "p999ms": .double(run.percentile(0.999)),
            ])
    }

    /// Requests at `rate` per second from `h2load` (HTTP/1.1, `connections` keep-alive
    /// connections on two threads, each paced with `--rps`) for `seconds` after a second of
    /// warm-up, the paths taken in turn; each request's time read from h2load's log
    /// (`--log-file`: from the request's start to the end of its answer).
    static func h2loadPaced(
        _ h2load: String, port: Int, paths: [String], rate: Int, connections: Int, seconds: Int, folder: String
    ) throws -> ServeBench.Measurement {
        let uris = folder + "/h2load-uris.txt"
        let log = folder + "/h2load.log"
        try Data(paths.prefix(1000).map { "http://127.0.0.1:\(port)\($0)" }.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: uris))
        try? FileManager.default.removeItem(atPath: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: h2load)
        process.arguments = [
            "--h1", "-c", "\(connections)", "-t", "2", "--rps", "\(max(1, rate / connections))", "-D", "\(seconds)", "--warm-up-time", "1",
            "-i", uris, "--log-file", log,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let text = FileManager.default.contents(atPath: log) else {
            throw BenchFailure("h2load exited \(process.terminationStatus) without its log")
        }
        // Lines: start (µs since 1970), status, microseconds to the end of the answer.
        var latencies: [UInt64] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: "\t"))
            guard fields.count == 3, let status = Int(String(decoding: fields[1], as: UTF8.self)),
                let micros = UInt64(String(decoding: fields[2], as: UTF8.self))
            else { continue }
            guard status == 200 else { throw BenchFailure("h2load got HTTP \(status)") }
            latencies.append(micros * 1000)
        }
        guard !latencies.isEmpty else { throw BenchFailure("h2load logged no request") }
        return ServeBench.Measurement(
            label: "queries, paced \(rate)/s by h2load", clients: connections, count: latencies.count, seconds: Double(seconds),
            latencies: latencies.sorted())
    }

    /// A row of wrk's figures at `connections`: the rate (per CPU-second of the bench's
    /// process), p50 and p99, and the rate's shares of the library's two threads (`library`,
    /// when given) and of the responder's rate.
    static func wrkRow(_ what: String, _ connections: Int, _ result: WrkResult, responder: WrkResult, library: Double? = nil) -> Row {
        var shares: [(key: String, of: String, value: Double)] = []
        if let library { shares.append(("shareOfLibrary", "of the library's 2 threads", result.rate / library)) }
        shares.append(("shareOfResponder", "of the responder", result.rate / responder.rate))
        let perCPU = Double(result.requests) / result.serverCPUSeconds
        var json: [(String, JSONValue)] = [
            ("connections", .int(Int64(connections))), ("perSecond", .int(Int64(result.rate.rounded()))),
            ("perServerCPUSecond", .int(Int64(perCPU.rounded()))), ("p50ms", .double(result.p50ms)), ("p99ms", .double(result.p99ms)),
        ]
        for share in shares { json.append((share.key, .double((share.value * 100).rounded() / 100))) }
        return Row(
            what: what + "; share " + shares.map(\.of).joined(separator: ", "),
            value: String(format: "%.0f /s (%.0f), p50 %.3f ms, p99 %.3f ms; ", result.rate, perCPU, result.p50ms, result.p99ms)
                + shares.map { String(format: "%.0f %%", $0.value * 100) }.joined(separator: ", "),
            json: .object(JSONObject(json)))
    }

    /// The load stages against `server` (listening on `port`, serving `engine`'s database), and
    /// against `responder` for the machine's bound. With `postOnly`, the notification rounds alone.
    static func run(
        server: Server, engine: Engine, port: Int, responder: LoopbackResponder?, ids: [String], freshBodies: [[UInt8]], corpus: Corpus, folder: String, seconds: Int,
        rounds: Int, postOnly: Bool
    ) throws -> [Row] {
        guard !postOnly else {
            guard let wrkPath else { return [Row(what: "wrk", value: "skipped: no wrk on PATH (apt-get install -y wrk)", json: "skipped")] }
            return try notificationRounds(server: server, wrkPath: wrkPath, freshBodies: freshBodies, corpus: corpus, folder: folder, rounds: rounds)
        }
        var rows: [Row] = []
        let paths = ids.map { "/customers/" + $0 }
        guard let responder else { throw BenchFailure("no responder to measure the machine's bound with") }
        // The paced client first: the bench's own, no wrk needed.
        let pacedRate = 10_000
        let paced = try paced(port: port, paths: paths, rate: pacedRate, connections: 16, seconds: Double(seconds))
        rows.append(pacedRow(paced, rate: pacedRate, by: nil))
        // The same rate from a load generator that is not the engine's code, in its own process.
        if let h2loadPath {
            let external = try h2loadPaced(h2loadPath, port: port, paths: paths, rate: pacedRate, connections: 16, seconds: seconds, folder: folder)
            rows.append(pacedRow(external, rate: pacedRate, by: "h2load"))
            // The same pacing against the responder: the latency this machine gives any server.
            let bound = try h2loadPaced(
                h2loadPath, port: responder.port, paths: paths, rate: pacedRate, connections: 16, seconds: seconds, folder: folder)
            rows.append(pacedRow(bound, rate: pacedRate, by: "h2load", of: "a responder that only answers (the machine's bound)"))
            // And against the server's HTTP without a query: what the query adds to the latency.
            let health = try h2loadPaced(h2loadPath, port: port, paths: ["/health"], rate: pacedRate, connections: 16, seconds: seconds, folder: folder)
            rows.append(pacedRow(health, rate: pacedRate, by: "h2load", request: "GET /health"))
        } else {
            rows.append(Row(what: "h2load", value: "skipped: no h2load on PATH (apt-get install -y nghttp2-client)", json: "skipped"))
        }

        guard let wrkPath else {
            rows.append(Row(what: "wrk", value: "skipped: no wrk on PATH (apt-get install -y wrk)", json: "skipped"))
            return rows
        }
        let idsPath = folder + "/ids.txt"
        try Data(ids.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: idsPath))
        let queryScriptPath = folder + "/queries.lua"
        try Data(queryScript.utf8).write(to: URL(fileURLWithPath: queryScriptPath))

        let healthScriptPath = folder + "/health.lua"
        try Data(healthScript.utf8).write(to: URL(fileURLWithPath: healthScriptPath))

        // Queries: the library on two threads and wrk, alternated, best round of each; beside
        // them, the server's HTTP alone (`GET /health`) and the responder.
        var libraryBest: ServeBench.Measurement? = nil
        var wrkBest: [Int: WrkResult] = [:]
        var healthBest: [Int: WrkResult] = [:]
        var boundBest: [Int: WrkResult] = [:]
        let levels = [2, 16, 64]
        func best(_ result: WrkResult, in table: inout [Int: WrkResult], _ connections: Int, _ what: String) throws {
            guard result.errors == 0 else { throw BenchFailure("wrk \(what): \(result.errors) errors") }
            if result.rate > table[connections]?.rate ?? 0 { table[connections] = result }
        }
        for _ in 0..<2 {
            let count = 200_000
            let cpu = Clock.processCPU()
            var library = try ServeBench.measure("queries, library", clients: 2, count: count, setup: { _ in () }) { _, index in
                guard case .customer = try engine.query(.appTransactionId(ids[index % ids.count])) else { throw BenchFailure("not found") }
            }
            library.cpuSeconds = Clock.processCPU() - cpu
            if library.rate > libraryBest?.rate ?? 0 { libraryBest = library }
            for connections in levels {
                func run(_ port: Int, _ script: String) throws -> WrkResult {
                    try wrk(wrkPath, port: port, threads: 2, connections: connections, seconds: seconds, script: script, arguments: [idsPath])
                }
                try best(run(port, queryScriptPath), in: &wrkBest, connections, "GET /customers")
                try best(run(port, healthScriptPath), in: &healthBest, connections, "GET /health")
                try best(run(responder.port, queryScriptPath), in: &boundBest, connections, "GET (responder)")
            }
        }
        let library = libraryBest!
        rows.append(
            Row(
                what: "Engine.query, 2 threads, same database (per CPU-s)",
                value: String(format: "%.0f /s (%.0f), p50 %.3f ms, p99 %.3f ms", library.rate, Double(library.count) / library.cpuSeconds,
                    library.percentile(0.5), library.percentile(0.99)),
                json: ["perSecond": .int(Int64(library.rate.rounded())), "perCPUSecond": .int(Int64((Double(library.count) / library.cpuSeconds).rounded()))]))
        for connections in levels {
            let result = wrkBest[connections]!
            let bound = boundBest[connections]!
            rows.append(
                wrkRow(
                    "wrk GET /customers/{id}, 2 threads, \(connections) connections (per server CPU-s)", connections, result, responder: bound,
                    library: library.rate))
            note("  wrk GET, \(connections) connections: \(Int(result.rate))/s, \(Int(result.rate / library.rate * 100)) % of the library's 2 threads, \(Int(result.rate / bound.rate * 100)) % of the responder")
        }
        for (what, table) in [("wrk GET /health (the server's HTTP alone)", healthBest), ("wrk GET, a responder that only answers (the machine's bound)", boundBest)] {
            for connections in levels {
                rows.append(
                    wrkRow("\(what), \(connections) connections (per CPU-s of the bench's process)", connections, table[connections]!, responder: boundBest[connections]!))
            }
        }

        rows += try notificationRounds(server: server, wrkPath: wrkPath, freshBodies: freshBodies, corpus: corpus, folder: folder, rounds: rounds)
        return rows
    }

    /// Notifications: the command line with 2 workers, then wrk's 64 connections, each on
    /// fresh notifications (`freshBodies` split in `2 × rounds` parts), alternated `rounds`
    /// times, the best round of each kept.
    static func notificationRounds(
        server: Server, wrkPath: String, freshBodies: [[UInt8]], corpus: Corpus, folder: String, rounds: Int
    ) throws -> [Row] {
        var rows: [Row] = []
        let half = freshBodies.count / (2 * rounds)
        let postScriptPath = folder + "/notifications.lua"
        try Data(notificationScript.utf8).write(to: URL(fileURLWithPath: postScriptPath))
        let config = CLIIngestBench.binary == nil ? nil : try CLIIngestBench.writeConfiguration(corpus, folder: folder)
        var cliBest: CLIIngestBench.Run? = nil
        var postBest: (rate: Double, row: Row)? = nil
        for round in 0..<rounds {
            let base = 2 * round * half
            let cliLines = freshBodies[base..<(base + half)].map { String(decoding: $0, as: UTF8.self) }
            let httpLines = freshBodies[(base + half)..<(base + 2 * half)].map { String(decoding: $0, as: UTF8.self) }
            let cliPath = folder + "/cli-corpus-\(round).ndjson"
            let httpPath = folder + "/http-corpus-\(round).ndjson"
            try Data((cliLines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: cliPath))
            try Data((httpLines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: httpPath))
            if let binary = CLIIngestBench.binary, let config {
                let cli = try CLIIngestBench.run(
                    binary: binary, corpusPath: cliPath, config: config, notifications: half, stdin: false, workers: 2,
                    database: folder + "/cli-\(round).sqlite")
                note("  round \(round + 1): entitlements ingest --workers 2: \(Int(cli.rate))/s")
                if cli.rate > cliBest?.rate ?? 0 { cliBest = cli }
            }
            let post = try postRound(server: server, wrkPath: wrkPath, script: postScriptPath, httpPath: httpPath, count: half)
            note("  round \(round + 1): wrk POST: \(Int(post.rate))/s")
            if post.rate > postBest?.rate ?? 0 { postBest = post }
        }
        if let cli = cliBest {
            rows.append(
                Row(
                    what: "entitlements ingest --workers 2, \(half) notifications (per CPU-s), best of \(rounds)",
                    value: String(format: "%.0f /s (%.0f)", cli.rate, Double(half) / cli.cpuSeconds),
                    json: ["perSecond": .int(Int64(cli.rate.rounded())), "perCPUSecond": .int(Int64((Double(half) / cli.cpuSeconds).rounded()))]))
        } else {
            rows.append(Row(what: "entitlements ingest --workers 2", value: "skipped: no release entitlements beside the bench", json: "skipped"))
        }
        var post = postBest!.row
        let cliRate = cliBest?.rate
        let share = cliRate.map { String(format: "; %.0f %% of the command line", postBest!.rate / $0 * 100) } ?? ""
        post.value += share
        if case .object(var object) = post.json {
            object["shareOfCommandLine"] = cliRate.map { .double((postBest!.rate / $0 * 100).rounded() / 100) } ?? .null
            post.json = .object(object)
        }
        rows.append(post)
        note("  wrk POST: \(Int(postBest!.rate))/s\(share)")
        return rows
    }

    /// One round of wrk posting the `count` notifications of `httpPath` from 64 connections.
    static func postRound(server: Server, wrkPath: String, script: String, httpPath: String, count half: Int) throws -> (rate: Double, row: Row) {
        // Timed by the server's commits: from the first batch committed to the last notification,
        // the items after the first batch over that time (wrk's own clock runs its whole duration).
        let before = server.ingestStatistics
        let passesBefore = server.verificationStatistics
        var first: (time: Double, items: Int)? = nil
        var last = 0.0
        let post = try wrk(
            wrkPath, port: server.address.port, threads: 2, connections: 64, seconds: 120, script: script, arguments: [httpPath, "2"]
        ) {
            let now = server.ingestStatistics
            if first == nil && now.batches > before.batches { first = (Clock.now(), now.items - before.items) }
            guard now.items - before.items >= half else { return false }
            last = Clock.now()
            return true
        }
        let after = server.ingestStatistics
        let passes = server.verificationStatistics.passes - passesBefore.passes
        let items = after.items - before.items
        guard items == half, post.errors == 0, let first, last > first.time else {
            throw BenchFailure("wrk POST: \(items) of \(half) notifications committed, \(post.errors) errors")
        }
        let postRate = Double(items - first.items) / (last - first.time)
        let row = Row(
            what: "wrk POST /notifications, 64 connections, \(half) notifications (per server CPU-s), commits, verification passes",
            value: String(format: "%.0f /s (%.0f), p50 %.3f ms, p99 %.3f ms, %d commits, %d passes", postRate, Double(items) / post.serverCPUSeconds,
                post.p50ms, post.p99ms, after.batches - before.batches, passes),
            json: [
                "perSecond": .int(Int64(postRate.rounded())), "perServerCPUSecond": .int(Int64((Double(items) / post.serverCPUSeconds).rounded())),
                "p50ms": .double(post.p50ms), "p99ms": .double(post.p99ms), "batches": .int(Int64(after.batches - before.batches)),
                "verificationPasses": .int(Int64(passes)),
            ])
        return (postRate, row)
    }
}
