import Foundation

/// The command line of `entitlements-bench`.
struct Options {
    var out = "bench-out/results.json"
    var notifications = 20_000
    var batch = 256
    var customers = 100_000
    var events = 1_000_000
    var queries = 200_000
    var seconds = 3.0
    var peerLimit = 1_000
    var peer = true
    var peerScript: String? = nil
    var smoke = false
    var keep = false
    var reuseDatabase = false
    var rawHeader = BigDatabase.RawHeader.compact
    var only: Set<Stage> = Set(Stage.allCases)
    /// Random signatures the key table is held to OpenSSL's verify on (stage `keytable`).
    var keyTableChecks = 1_000_000

    enum Stage: String, CaseIterable {
        case ecdsa, keytable, verify, ingest, peer, query, replay, concurrent, lifecycle, metrics
    }

    static let help = """
        entitlements-bench: how fast the entitlement engine runs, on this machine, against the machine's
        own limit and against Apple's App Store Server Library (Python) on the same input.

        USAGE
          swift run -c release entitlements-bench [options]
          swift run -c debug entitlements-bench --smoke
          entitlements-bench scale --events N [--customers M] [--db PATH] [--reuse-db]   (scale --help)
          entitlements-bench serve | replication ...

        It makes its own corpus with a throwaway Apple-shaped test PKI (P-384 root and intermediate,
        P-256 leaf), then measures, prints a table and writes JSON:
          ecdsa    bare P-256 ECDSA verifications per second through OpenSSL on one core (the limit)
          keytable the engine's signature check with a key's table, batched as the ingest batches it,
                   against OpenSSL's EVP_PKEY_verify on --key-table-checks random signatures, valid and
                   altered (a differential check: any disagreement fails the run; also with --smoke)
          verify   verification only, one core: a single JWS, and a notification with nested
                   transaction and renewal info (3 JWS); chain cache warm and cold
          ingest   Engine.ingest end to end (verify, append, project) in batches, 1 and 2 workers;
                   bytes per event on disk; EventStore.append with the lifecycle feed recorded and
                   switched off; the webhook deliverer to a loopback endpoint; Engine.ingest([body])
                   from 64 concurrent tasks (an embedding server's webhooks, committed together)
          peer     Apple's Python library on the same corpus (Benchmarks/peer-python.sh), when python3 is here
          query    Engine.query point lookups on a database of --customers customers: rate, p50, p99
          replay   Engine.replay of --events events over --customers customers: events/s, peak RSS
                   (in a child process)
          concurrent  Engine.ingest latency (p50, p99, max) while Engine.replay of the same database
                   runs on the same engine (one notification every 5 ms)
          lifecycle  Engine.lifecycle(since: last) with nothing due, on a database of --customers
                   customers whose subscriptions all run (every expiry pending): median and max
          metrics  Engine.metrics for a year, monthly and daily, on --events events of Production
                   subscriptions over --customers customers: from the revenue facts kept per customer,
                   and derived from the log when none are kept; a month of Engine.revenue

        OPTIONS
          --out PATH            results JSON (default bench-out/results.json); the corpus
                                (corpus.ndjson, root.der), databases (work/) and the peer's
                                venv go in the same folder
          --notifications N     signed notifications in the corpus (default 20000)
          --batch N             notifications per Engine.ingest call (default 256)
          --customers N         customers in the query/replay database (default 100000)
          --events N            events in the query/replay database (default 1000000)
          --queries N           timed point lookups (default 200000)
          --seconds S           time for each rate measured by repetition (default 3)
          --key-table-checks N  random signatures of the keytable stage (default 1000000, also with --smoke)
          --peer-limit N        notifications the Python peer verifies (default 1000)
          --no-peer             skip the Python peer
          --peer-script PATH    the peer script (default Benchmarks/peer-python.sh)
          --raw-header compact|full
                                JWS header stored in the query/replay database's stand-in raw JWS:
                                compact (no certificate chain, default) or full (the real x5c chain)
          --reuse-db            reuse the query/replay database of an earlier run when its size matches
          --keep                keep the databases (default: the query/replay database is removed)
          --only LIST           stages to run, comma-separated: ecdsa,keytable,verify,ingest,peer,query,replay,concurrent,lifecycle,metrics
          --smoke               tiny sizes (200 notifications, 2000 events), checks each stage,
                                no peer, exits non-zero on a failure; a few seconds in a debug build
          --help                this text

        EXIT CODE
          0 every stage ran and checked out; 1 a stage failed; 2 usage error.
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchFailure("\(name) expects a value") }
            return arguments[index]
        }
        func integer(_ name: String, minimum: Int = 1) throws -> Int {
            let text = try value(name)
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number >= minimum else {
                throw BenchFailure("\(name) expects an integer >= \(minimum), found \(text)")
            }
            return number
        }
        var explicit: Set<String> = []
        while index < arguments.count {
            let argument = arguments[index]
            explicit.insert(argument)
            switch argument {
            case "--out": options.out = try value(argument)
            case "--notifications": options.notifications = try integer(argument, minimum: 8)
            case "--batch": options.batch = try integer(argument)
            case "--customers": options.customers = try integer(argument)
            case "--events": options.events = try integer(argument)
            case "--queries": options.queries = try integer(argument, minimum: 10)
            case "--seconds":
                let text = try value(argument)
                guard let seconds = Double(text), seconds > 0 else { throw BenchFailure("--seconds expects a positive number") }
                options.seconds = seconds
            case "--peer-limit": options.peerLimit = try integer(argument)
            case "--key-table-checks": options.keyTableChecks = try integer(argument, minimum: 4)
            case "--no-peer": options.peer = false
            case "--peer-script": options.peerScript = try value(argument)
            case "--raw-header":
                let text = try value(argument)
                guard let header = BigDatabase.RawHeader(rawValue: text) else { throw BenchFailure("--raw-header expects compact or full") }
                options.rawHeader = header
            case "--reuse-db": options.reuseDatabase = true
            case "--keep": options.keep = true
            case "--only":
                var stages: Set<Stage> = []
                for name in try value(argument).split(separator: ",") {
                    guard let stage = Stage(rawValue: String(name)) else {
                        throw BenchFailure("--only: unknown stage \(name); stages are \(Stage.allCases.map(\.rawValue).joined(separator: ","))")
                    }
                    stages.insert(stage)
                }
                options.only = stages
            case "--smoke": options.smoke = true
            default: throw BenchFailure("unknown option \(argument) (see --help)")
            }
            index += 1
        }
        if options.smoke {
            if !explicit.contains("--notifications") { options.notifications = 200 }
            if !explicit.contains("--customers") { options.customers = 200 }
            if !explicit.contains("--events") { options.events = 2_000 }
            if !explicit.contains("--queries") { options.queries = 1_000 }
            if !explicit.contains("--seconds") { options.seconds = 0.1 }
            if !explicit.contains("--batch") { options.batch = 64 }
            options.peer = false
        }
        if !options.peer { options.only.remove(.peer) }
        guard options.events >= options.customers else { throw BenchFailure("--events must be at least --customers") }
        return options
    }
}
