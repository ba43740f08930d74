import Entitlements
import Foundation

/// What `serve` counts while it runs, for `GET /metrics`: requests by route and status
/// with their latency, and ingest results by kind, result and code. Thread-safe.
final class ServerMetrics: @unchecked Sendable {
    /// Latency buckets, in seconds. Queries answer in tens of microseconds, ingests wait
    /// for the write-ahead log's sync (milliseconds), a year of metrics takes up to seconds:
    /// the buckets span 50 µs to 10 s.
    static let latencyBuckets: [Double] = [
        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
    ]
    /// The buckets as their `le` labels.
    static let bucketLabels = [
        "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
        "2.5", "10",
    ]

    struct Latency {
        var buckets = [Int64](repeating: 0, count: ServerMetrics.latencyBuckets.count)
        var sum: Double = 0
        var count: Int64 = 0

        mutating func record(_ seconds: Double) {
            if let index = ServerMetrics.latencyBuckets.firstIndex(where: { seconds <= $0 }) { buckets[index] += 1 }
            sum += seconds
            count += 1
        }
    }

    struct RequestKey: Hashable, Comparable {
        var route: String
        var method: String
        var status: Int
        static func < (lhs: RequestKey, rhs: RequestKey) -> Bool {
            (lhs.route, lhs.method, lhs.status) < (rhs.route, rhs.method, rhs.status)
        }
    }

    struct IngestKey: Hashable, Comparable {
        var kind: String
        var result: String
        var code: String
        static func < (lhs: IngestKey, rhs: IngestKey) -> Bool {
            (lhs.kind, lhs.result, lhs.code) < (rhs.kind, rhs.result, rhs.code)
        }
    }

    private let lock = NSLock()
    private var requests: [RequestKey: Int64] = [:]
    private var latencies: [String: Latency] = [:]
    private var ingests: [IngestKey: Int64] = [:]
    /// When the server started, seconds since 1970.
    let started = Date().timeIntervalSince1970

    /// One answered request.
    func request(route: String, method: String, status: Int, seconds: Double) {
        lock.lock()
        defer { lock.unlock() }
        requests[RequestKey(route: route, method: method, status: status), default: 0] += 1
        // Counted in place: a copy taken out of the dictionary would copy its buckets at every request.
        latencies[route, default: Latency()].record(seconds)
    }

    /// The result lines of one ingest.
    func ingested(_ results: [IngestResult]) {
        lock.lock()
        defer { lock.unlock() }
        for result in results {
            let key = IngestKey(kind: result.kind?.rawValue ?? "unknown", result: result.outcome.rawValue, code: result.errorCode ?? "")
            ingests[key, default: 0] += 1
        }
    }

    /// Writes the counters and the histogram.
    func write(to out: inout PrometheusText) {
        lock.lock()
        let requests = self.requests
        let latencies = self.latencies
        let ingests = self.ingests
        lock.unlock()
        out.family("entitlements_http_requests_total", type: "counter", help: "HTTP requests answered, by route, method and status.")
        for key in requests.keys.sorted() {
            out.sample("entitlements_http_requests_total", [("route", key.route), ("method", key.method), ("status", String(key.status))], requests[key]!)
        }
        out.family(
            "entitlements_http_request_duration_seconds", type: "histogram",
            help: "Seconds from a request's arrival (whole, or its head when answered before the body) to its answer, by route.")
        for route in latencies.keys.sorted() {
            let latency = latencies[route]!
            var cumulative: Int64 = 0
            for index in Self.latencyBuckets.indices {
                cumulative += latency.buckets[index]
                out.sample("entitlements_http_request_duration_seconds_bucket", [("route", route), ("le", Self.bucketLabels[index])], cumulative)
            }
            out.sample("entitlements_http_request_duration_seconds_bucket", [("route", route), ("le", "+Inf")], latency.count)
            out.sample("entitlements_http_request_duration_seconds_sum", [("route", route)], latency.sum)
            out.sample("entitlements_http_request_duration_seconds_count", [("route", route)], latency.count)
        }
        out.family(
            "entitlements_ingest_results_total", type: "counter",
            help: "Ingested items by kind, result (appended, duplicate, rejected, empty, error) and error code (empty when none).")
        for key in ingests.keys.sorted() {
            out.sample("entitlements_ingest_results_total", [("kind", key.kind), ("result", key.result), ("code", key.code)], ingests[key]!)
        }
    }
}
