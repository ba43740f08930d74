import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation

/// `entitlements-bench __profile WHAT [N]`: one stage's work alone, inside
/// ``profiledRegion(_:)``, for an instruction-counting profiler:
///
///     valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*profiledRegion*' \
///         .build-bench/release/entitlements-bench __profile verify-warm 1000
///
/// WHAT: verify-warm, verify-cold, serve-bodies, ingest, ingest-concurrent, append, query, query-linked, replay, lanes, ecdsa, keytable.
/// `BENCH_LIFECYCLE=0 ... __profile append N` appends without recording the lifecycle feed;
/// `BENCH_APPEND_BATCH=B` appends B notifications a transaction (default 256);
/// `BENCH_RECEIPT=backlog` receives them all on 2026-01-01 instead of as Apple sends them.
///
/// Collection is toggled per thread: replay reduces on other threads, so count
/// them too by also toggling on the reducing lanes' closure:
/// `--toggle-collect='$s10EventStore11ReplayChunkV6reduce5rules8productsSayAC7OutcomeOG15EntitlementCore5RulesV_AA11ProductsMetCtFySiYbXEfU0_'`
/// (`nm` on the binary names the closure when the function's signature changes).
/// `BENCH_KEEP_DATABASE=1` keeps the query/replay database in the temporary folder, and
/// reuses it when it is there (`entitlements-bench-profile-big-N.sqlite`).
/// The optimizer can fold the query loop's region into its caller (callgrind then collects
/// nothing): toggle on `Engine.query` itself instead,
/// `--toggle-collect='$s12Entitlements6EngineC5query_2atAA11QueryAnswerOAA08CustomerE0O_s5Int64VSgtAA0B5ErrorVYKF'`.
enum Profile {
    static let command = "__profile"

    static func run(_ arguments: [String]) -> Int32 {
        guard let what = arguments.first else {
            note("usage: entitlements-bench __profile verify-warm|verify-cold|serve-bodies|ingest|ingest-concurrent|ingest-pipeline|append|query|query-linked|replay|lanes|ecdsa|keytable|micro [N]")
            return 2
        }
        let n = arguments.count > 1 ? Int(arguments[1]) ?? 1_000 : 1_000
        do {
            switch what {
            case "verify-warm", "verify-cold":
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let verifier = try VerificationBench.verifier(corpus, cache: what == "verify-warm" ? 64 : 0)
                let notifications = corpus.samples.map(\.notification)
                _ = try verifier.verifyNotification(notifications[0])
                try profiledRegion {
                    for jws in notifications { _ = try verifier.verifyNotification(jws) }
                }
            case "serve-bodies":
                // `__profile serve-bodies N [PASS]`: POST /notifications bodies verified as serve's
                // passes verify them, PASS bodies a pass (default 1).
                let pass = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 1) : 1
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile-bodies.sqlite"
                Storage.remove(path)
                defer { Storage.remove(path) }
                let engine = try Engine(configuration: corpus.configuration, databasePath: path)
                let documents = corpus.samples.map { InputBytes($0.body) }
                _ = engine.documentVerifier.verifiedNotifications([documents[0]], otherwise: "")
                try profiledRegion {
                    for start in stride(from: 0, to: documents.count, by: pass) {
                        let items = engine.documentVerifier.verifiedNotifications(
                            Array(documents[start..<min(documents.count, start + pass)]), otherwise: "")
                        if items.contains(where: \.isRejection) { throw BenchFailure("a body was rejected") }
                    }
                }
            case "ingest":
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile.sqlite"
                Storage.remove(path)
                defer { Storage.remove(path) }
                let engine = try Engine(configuration: corpus.configuration, databasePath: path)
                let documents = corpus.samples.map { InputBytes($0.body) }
                // `BENCH_BATCH` documents a call (default 256), on `BENCH_WORKERS` threads (default 1).
                let environment = ProcessInfo.processInfo.environment
                let batch = max(1, environment["BENCH_BATCH"].flatMap { Int($0) } ?? 256)
                let workers = max(1, environment["BENCH_WORKERS"].flatMap { Int($0) } ?? 1)
                let cpuStart = Clock.processCPU()
                try profiledRegion {
                    var index = 0
                    while index < documents.count {
                        let end = min(index + batch, documents.count)
                        _ = try engine.ingest(Array(documents[index..<end]), workers: workers, receivedAt: TestPayloads_january2026)
                        index = end
                    }
                }
                note("ingest: batches of \(batch), \(workers) workers, \(Format.fixed((Clock.processCPU() - cpuStart) / Double(documents.count) * 1e6, 1)) µs CPU per notification")
            case "ingest-concurrent":
                // `__profile ingest-concurrent N TASKS`: N notifications through the async
                // `Engine.ingest([body])`, one body a call, from TASKS concurrent tasks (default 64):
                // an embedding server answering each webhook on its own.
                let tasks = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 64) : 64
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let documents = corpus.samples.map { InputBytes($0.body) }
                var result: (run: IngestBench.Run, transactions: Int)? = nil
                try profiledRegion {
                    result = try IngestBench.concurrent(
                        corpus, documents: documents, tasks: tasks, path: NSTemporaryDirectory() + "/entitlements-bench-profile-concurrent.sqlite")
                }
                if let (run, transactions) = result {
                    note("ingest-concurrent: \(tasks) tasks, \(Format.count(run.rate)) /s, \(Format.fixed(run.cpuSeconds / Double(run.notifications) * 1e6, 1)) µs CPU per notification, \(transactions) transactions")
                }
            case "ingest-pipeline":
                // `__profile ingest-pipeline N WORKERS`: Engine.ingest(batches:) as the benchmark runs it.
                let workers = arguments.count > 2 ? Int(arguments[2]) ?? 2 : 2
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let documents = corpus.samples.map { InputBytes($0.body) }
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile-pipeline.sqlite"
                var run: IngestBench.Run? = nil
                try profiledRegion {
                    run = try IngestBench.run(corpus, documents: documents, workers: workers, batch: 256, path: path)
                }
                Storage.remove(path)
                if let run {
                    note("ingest-pipeline: \(workers) workers, \(Format.count(run.rate)) /s, \(Format.fixed(run.cpuSeconds / Double(run.notifications) * 1e6, 1)) µs CPU per notification")
                }
            case "ingest-file":
                // `__profile ingest-file CORPUS.ndjson CONFIG.json`: Engine.ingest(batches:) with 2 workers
                // (`BENCH_WORKERS` to change) on
                // the lines of a file read beforehand, as the command line does without its input reading.
                guard arguments.count >= 3 else { note("usage: __profile ingest-file CORPUS CONFIG"); return 2 }
                var documents: [InputBytes] = []
                // As the command line reads them.
                if var reader = InputReader(path: arguments[1], limit: 1 << 20) {
                    let started = Clock.now()
                    while let lines = reader.nextBatch(maxLines: 512) { documents += lines }
                    note("InputReader: \(documents.count) lines in \(Format.fixed(Clock.now() - started, 2)) s")
                }
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile-file.sqlite"
                Storage.remove(path)
                defer { Storage.remove(path) }
                let engine = try Engine(configuration: try EngineConfiguration.load(path: arguments[2]), databasePath: path)
                let workers = ProcessInfo.processInfo.environment["BENCH_WORKERS"].flatMap { Int($0) } ?? 2
                let batchSize = ProcessInfo.processInfo.environment["BENCH_BATCH"].flatMap { Int($0) } ?? 256
                var index = 0
                let start = Clock.now()
                final class Box: @unchecked Sendable { var reader: InputReader?; init(_ r: InputReader?) { reader = r } }
                let lazy = Box(arguments.count > 4 ? InputReader(path: arguments[1], limit: 1 << 20) : nil)
                let cpuStart = Clock.processCPU()
                defer {
                    let cpu = Clock.processCPU() - cpuStart
                    note("ingest-file: \(Format.fixed(cpu / Double(max(documents.count, 1)) * 1e6, 1)) µs CPU per notification")
                }
                if ProcessInfo.processInfo.environment["BENCH_LANE_ONLY"] == "1" {
                    // The lanes' work alone on this one thread: each batch of 256 verified into
                    // its append items as a lane verifies it (the signatures checked at once),
                    // kept for the batch and then dropped, no append.
                    try profiledRegion {
                        var start = 0
                        while start < documents.count {
                            let end = min(start + 256, documents.count)
                            let items = engine.documentVerifier.verifiedItems(batch: Array(documents[start..<end]))
                            precondition(items.count == end - start)
                            start = end
                        }
                    }
                    note("ingest-file: \(documents.count) in \(Format.fixed(Clock.now() - start, 2)) s, verified only")
                    return 0
                }
                if ProcessInfo.processInfo.environment["BENCH_SEQUENTIAL"] == "1" {
                    // Verify and append each batch on this one thread (Engine.ingest(_:workers: 1)).
                    try profiledRegion {
                        var start = 0
                        while start < documents.count {
                            let end = min(start + 256, documents.count)
                            _ = try engine.ingest(Array(documents[start..<end]), workers: 1, receivedAt: TestPayloads_january2026)
                            start = end
                        }
                    }
                    note("ingest-file: \(documents.count) in \(Format.fixed(Clock.now() - start, 2)) s, sequential")
                    return 0
                }
                try profiledRegion {
                    try engine.ingest(batches: {
                        if lazy.reader != nil { return lazy.reader!.nextBatch(maxLines: 512) }
                        guard index < documents.count else { return nil }
                        let end = min(index + batchSize, documents.count)
                        defer { index = end }
                        return Array(documents[index..<end])
                    }, workers: workers) { _ in }
                }
                note("ingest-file: \(documents.count) in \(Format.fixed(Clock.now() - start, 2)) s, \(workers) workers")
            case "append":
                let corpus = Corpus(count: n, customers: max(1, n / 4))
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile.sqlite"
                Storage.remove(path)
                defer { Storage.remove(path) }
                let verifier = try DocumentVerifier(configuration: corpus.configuration)
                // `BENCH_APPEND_BATCH=B`: B notifications a transaction (default 256, as `ingest`).
                let size = max(1, Int(ProcessInfo.processInfo.environment["BENCH_APPEND_BATCH"] ?? "") ?? 256)
                var batches: [[AppendItem]] = []
                var index = 0
                while index < corpus.samples.count {
                    let end = min(index + size, corpus.samples.count)
                    batches.append(corpus.samples[index..<end].flatMap { verifier.verifiedItems(InputBytes($0.body)) })
                    index = end
                }
                let store = try EventStore(path: path, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) })
                // `BENCH_LIFECYCLE=0`: the append without recording the lifecycle feed.
                store.recordsLifecycle = ProcessInfo.processInfo.environment["BENCH_LIFECYCLE"] != "0"
                let cpu = Clock.threadCPU()
                defer {
                    let seconds = Clock.threadCPU() - cpu
                    note("append: \(Format.fixed(seconds / Double(max(corpus.samples.count, 1)) * 1e6, 1)) µs CPU per notification (lifecycle \(store.recordsLifecycle ? "recorded" : "off"))")
                }
                // Received live, each batch shortly after it was signed; `BENCH_RECEIPT=backlog`: all on 2026-01-01.
                let receipt: IngestBench.Receipt = ProcessInfo.processInfo.environment["BENCH_RECEIPT"] == "backlog" ? .backlog : .live
                let receivedAt = batches.indices.map {
                    receipt.receivedAt(corpus.plan, batch: size, number: $0, count: corpus.samples.count)
                }
                try profiledRegion {
                    for (number, items) in batches.enumerated() {
                        _ = try store.append(items, rules: BenchRules.rules, rulesJSON: BenchRules.rulesJSON, receivedAt: receivedAt[number])
                    }
                }
            case "query-linked":
                // `__profile query-linked N`: Engine.query of N random customers of a database of N
                // events over N/10 customers, each linked to an app user and credited once (two
                // operator records in every projection, as an app that links each customer to its
                // own account keeps them); prints the time a query and a replay's CPU, without the
                // records and with them.
                let customers = max(1, n / 10)
                let plan = HistoryPlan(total: n, customers: customers, customerMajor: true)
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile-linked-\(n).sqlite"
                Storage.remove(path)
                defer { Storage.remove(path) }
                let corpus = Corpus(count: 8, customers: 2)
                _ = try BigDatabase.build(path: path, plan: plan, header: .compact, pki: corpus.pki) { _ in }
                let engine = try Engine(configuration: QueryBench.replayConfiguration, databasePath: path)
                var random = SplitMix64(seed: 1)
                let ids = (0..<n).map { _ in HistoryPlan.appTransactionId(random.below(customers)) }
                _ = try engine.query(.appTransactionId(ids[0]), at: QueryBench.at)
                var started = Clock.now()
                for id in ids { _ = try engine.query(.appTransactionId(id), at: QueryBench.at) }
                let plain = (Clock.now() - started) / Double(n)
                // A replay's CPU, the least of three.
                func replayCPU() throws -> Double {
                    var least = Double.infinity
                    for _ in 0..<3 {
                        let cpu = Clock.processCPU()
                        _ = try engine.replay(now: QueryBench.at)
                        least = min(least, Clock.processCPU() - cpu)
                    }
                    return least
                }
                let replayPlain = try replayCPU()
                for index in 0..<customers {
                    let customer = CustomerQuery.appTransactionId(HistoryPlan.appTransactionId(index))
                    let answers = [
                        try engine.link(id: "link-\(index)", appUserId: "user-\(index)", customer: customer),
                        try engine.credit(id: "credit-\(index)", target: .customer(customer), currency: "coins", units: 5),
                    ]
                    for case .refused(let refusal) in answers { throw BenchFailure("an operator record was refused: \(refusal.message)") }
                }
                _ = try engine.query(.appTransactionId(ids[0]), at: QueryBench.at)
                started = Clock.now()
                try profiledRegion {
                    for id in ids { _ = try engine.query(.appTransactionId(id), at: QueryBench.at) }
                }
                let linked = (Clock.now() - started) / Double(n)
                let replayLinked = try replayCPU()
                note(
                    "query-linked: replay (least of three) \(Format.fixed(replayPlain, 3)) CPU-s for \(n) events, \(Format.fixed(replayLinked, 3)) CPU-s with \(2 * customers) operator records more"
                )
                note(
                    "query-linked: \(Format.fixed(plain * 1e6, 2)) µs a query without operator records, \(Format.fixed(linked * 1e6, 2)) µs with two, over \(customers) customers"
                )
            case "query", "replay":
                let customers = max(1, n / 10)
                let plan = HistoryPlan(total: n, customers: customers, customerMajor: true)
                let path = NSTemporaryDirectory() + "/entitlements-bench-profile-big-\(n).sqlite"
                let keep = ProcessInfo.processInfo.environment["BENCH_KEEP_DATABASE"] != nil
                defer { if !keep { Storage.remove(path) } }
                if !(keep && FileManager.default.fileExists(atPath: path)) {
                    let corpus = Corpus(count: 8, customers: 2)
                    _ = try BigDatabase.build(path: path, plan: plan, header: .compact, pki: corpus.pki) { _ in }
                }
                let engine = try Engine(configuration: QueryBench.replayConfiguration, databasePath: path)
                if what == "query" {
                    var random = SplitMix64(seed: 1)
                    let ids = (0..<n).map { _ in HistoryPlan.appTransactionId(random.below(customers)) }
                    _ = try engine.query(.appTransactionId(ids[0]), at: QueryBench.at)
                    try profiledRegion {
                        for id in ids { _ = try engine.query(.appTransactionId(id), at: QueryBench.at) }
                    }
                } else {
                    try profiledRegion { _ = try engine.replay(now: QueryBench.at) }
                }
            case "micro":
                // Real-time cost of the pieces of one notification's ingest, on one thread.
                let corpus = Corpus(count: max(n, 64), customers: max(1, n / 4))
                let verifier = try DocumentVerifier(configuration: corpus.configuration)
                let inputs: [VerifiedInput] = corpus.samples.compactMap {
                    if case .verified(let input)? = verifier.verifiedItems(InputBytes($0.body)).first { return input }
                    return nil
                }
                let payloads: [JSONValue] = inputs.map { if case .notification(let n) = $0 { return n.payload.json }; return .null }
                let raws = inputs.map { Array($0.jws.utf8) }
                let events = inputs.enumerated().map { Event(seq: Int64($0.offset + 1), input: $0.element) }
                func micro(_ name: String, _ body: (Int) -> Void) {
                    let run = Rate(timed(Array(0..<inputs.count), seconds: 1, minimum: 100, body))
                    print("\(name): \(Format.fixed(run.cpuSeconds / Double(run.count) * 1e6, 2)) µs per notification (CPU)")
                }
                print("notification raw JWS \(raws[0].count) bytes, payload JSON \(JSONWriter.string(payloads[0]).utf8.count) bytes")
                micro("JSONWriter.string(notification payload)") { _ = JSONWriter.string(payloads[$0]) }
                let decoded = inputs.map(\.decodedJSON)
                print("stored payload JSON \(JSONWriter.string(decoded[0]).utf8.count) bytes")
                micro("input.decodedJSON") { _ = inputs[$0].decodedJSON }
                micro("JSONWriter.string(decodedJSON) (the stored payload)") { _ = JSONWriter.string(decoded[$0]) }
                micro("SHA256 of the raw JWS") { _ = SHA256.hash(raws[$0]) }
                micro("EventCodec.encode") { _ = EventCodec.encode(events[$0]) }
                micro("Event(seq:input:)") { _ = Event(seq: 1, input: inputs[$0]) }
                micro("DocumentVerifier.verifiedItems(body)") { _ = verifier.verifiedItems(InputBytes(corpus.samples[$0].body)) }
                micro("InputDocument.items(body)") { _ = InputDocument.items(Array(corpus.samples[$0].body.utf8)[...]) }
            case "lanes":
                // The replay lanes' work alone (decode the facts, apply, encode each state),
                // on one thread, without SQLite: N events over N/10 customers.
                let plan = HistoryPlan(total: n, customers: max(1, n / 10), customerMajor: true)
                let corpus = Corpus(count: 8, customers: 2)
                let maker = BigDatabase.InputMaker(plan: plan, header: .compact, pki: corpus.pki)
                // Each customer's facts one after the other in one buffer, as a replay's chunk holds them.
                var customers: [(key: CustomerKey, bytes: [UInt8], rows: [StoredFactsRow])] = []
                for (offset, item) in try maker.items(0..<n).enumerated() {
                    guard case .verified(let input) = item else { continue }
                    let event = Event(seq: Int64(offset + 1), input: input)
                    let key = event.customerKey ?? ""
                    if customers.last?.key != key { customers.append((key, [], [])) }
                    let facts = EventCodec.encode(event)
                    let start = customers[customers.count - 1].bytes.count
                    customers[customers.count - 1].rows.append(StoredFactsRow(seq: event.seq, start: start, count: facts.count))
                    customers[customers.count - 1].bytes += facts
                }
                func lanes() throws -> Int {
                    var interner = StringInterner()
                    var total = 0
                    for customer in customers {
                        var state = CustomerState(key: customer.key)
                        state.transactions.reserveCapacity(customer.rows.count)
                        try customer.bytes.withUnsafeBytes {
                            try state.apply(facts: $0, rows: customer.rows, rules: BenchRules.rules, interner: &interner)
                        }
                        total &+= StateCodec.encode(state).count
                    }
                    return total
                }
                _ = try lanes()
                let cpu = Clock.threadCPU()
                var bytes = 0
                try profiledRegion { bytes = try lanes() }
                let seconds = Clock.threadCPU() - cpu
                print("lanes: \(n) events, \(customers.count) customers, \(bytes) state bytes: \(Format.fixed(seconds / Double(n) * 1e9, 0)) ns per event (CPU, one thread)")
            case "ecdsa":
                try profiledRegion { _ = try ECDSALimit.measure(seconds: 0.5) }
            case "keytable":
                // `__profile keytable N`: the key table's differential check on N random signatures, one thread.
                var figures = KeyTableDifferential.Figures()
                try profiledRegion { figures = try KeyTableDifferential.run(checks: n, threads: 1, seed: 1) }
                print("keytable: \(figures.checks) checks, \(figures.valid) valid, \(figures.disagreements) disagreeing, \(Format.fixed(figures.seconds, 1)) s")
                if figures.disagreements > 0 { return 1 }
            default:
                note("unknown profile \(what)")
                return 2
            }
            return 0
        } catch {
            note("profile \(what): \(error)")
            return 1
        }
    }
}

/// The region an instruction-counting profiler collects (`--toggle-collect='*profiledRegion*'`).
@inline(never)
func profiledRegion(_ body: () throws -> Void) throws {
    try body()
}
