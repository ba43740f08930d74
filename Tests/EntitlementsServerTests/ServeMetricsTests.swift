import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

/// Whether python3 with `prometheus_client` can run here (installed with pip when missing);
/// when not, the referee's half of the test is skipped with a notice on standard error.
enum PrometheusReferee {
    static let isAvailable: Bool = {
        func importable() -> Bool { run(["python3", "-c", "import prometheus_client"]).status == 0 }
        if importable() { return true }
        _ = run(["python3", "-m", "pip", "install", "--quiet", "prometheus-client"])
        if importable() { return true }
        FileHandle.standardError.write(
            Data("notice: the prometheus_client referee is skipped: python3 with the prometheus-client package is not available (python3 -m pip install prometheus-client)\n".utf8))
        return false
    }()

    /// Parses the exposition with `prometheus_client.parser` and prints one line per sample:
    /// `name<TAB>sorted labels as JSON<TAB>value`, after a line per family `# family<TAB>name<TAB>type`.
    static let script = #"""
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        text = open(sys.argv[1]).read()
        for family in text_string_to_metric_families(text):
            print("# family\t%s\t%s" % (family.name, family.type))
            for sample in family.samples:
                print("%s\t%s\t%r" % (sample.name, json.dumps(sample.labels, sort_keys=True), float(sample.value)))
        """#

    static func run(_ arguments: [String]) -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        do { try process.run() } catch { return (-1, "", "\(error)") }
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, stdout, stderr)
    }
}

extension Reliability {
    /// `GET /metrics` in Prometheus's text format, `GET /metrics/summary` and `GET /revenue`
    /// (specification section 14).
    @Suite("Serve: metrics")
    struct ServeMetrics {
        static let token = "metrics-token-0123456789"
        static let day: Int64 = 86_400_000

        /// A Production subscription bought a day ago, active for 29 more days, at 9.99 USD.
        static func subscription(now: Int64) -> String {
            let transaction = TestPayloads.transaction(
                transactionId: "2000000000080001", appTransactionId: "704000000000080001", purchaseDate: now - Self.day,
                expiresDate: now + 29 * Self.day, environment: "Production", price: 9_990, currency: "USD")
            let payload = TestPayloads.notification(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", signedDate: now - Self.day + 10, environment: "Production",
                signedTransactionInfo: Scenario.pki.sign(transaction))
            return #"{"signedPayload":""# + Scenario.pki.sign(payload) + #""}"#
        }

        /// One sample of the exposition, as the Swift side reads it.
        struct Sample: Hashable {
            var name: String
            var labels: [String: String]
            var value: Double
        }

        /// A strict reading of the text format: `# HELP` and `# TYPE` before each family's
        /// samples, every other line `name{label="value",...} number`.
        static func parse(_ text: String) -> (types: [String: String], samples: [Sample], problems: [String]) {
            var types: [String: String] = [:]
            var samples: [Sample] = []
            var problems: [String] = []
            var helped = Set<String>()
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
                if line.hasPrefix("# HELP ") {
                    helped.insert(String(line.dropFirst(7).prefix { $0 != " " }))
                    continue
                }
                if line.hasPrefix("# TYPE ") {
                    let parts = line.dropFirst(7).split(separator: " ")
                    guard parts.count == 2, helped.contains(String(parts[0])) else { problems.append("TYPE without HELP: \(line)"); continue }
                    types[String(parts[0])] = String(parts[1])
                    continue
                }
                guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...].replacingOccurrences(of: "+Inf", with: "inf")) else {
                    problems.append("no value: \(line)")
                    continue
                }
                let series = line[..<space]
                var name = String(series)
                var labels: [String: String] = [:]
                if let brace = series.firstIndex(of: "{") {
                    guard series.hasSuffix("}") else { problems.append("unclosed labels: \(line)"); continue }
                    name = String(series[..<brace])
                    let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                    // Label values here hold no escaped quotes.
                    for pair in inner.split(separator: ",") {
                        let kv = pair.split(separator: "=", maxSplits: 1)
                        guard kv.count == 2, kv[1].hasPrefix("\""), kv[1].hasSuffix("\"") else { problems.append("bad label: \(line)"); continue }
                        labels[String(kv[0])] = String(kv[1].dropFirst().dropLast())
                    }
                }
                guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }) else { problems.append("bad name: \(line)"); continue }
                let family = types.keys.first { name == $0 || name.hasPrefix($0 + "_") }
                if family == nil { problems.append("sample before its TYPE: \(line)") }
                samples.append(Sample(name: name, labels: labels, value: value))
            }
            return (types, samples, problems)
        }

        @Test("GET /metrics: guarded by the token, parsed by the Swift side and by prometheus_client")
        func exposition() throws {
            let now = Engine.now()
            let workspace = try Workspace(name: "serve-metrics", environment: "Production")
            let server = try TestServer(token: Self.token, workspace: workspace)
            let auth = ["Authorization: Bearer \(Self.token)"]
            #expect(try server.exchange("GET", "/metrics").status == 401)

            #expect(try server.exchange("POST", "/notifications", body: Self.subscription(now: now)).status == 200)
            let forged = ServeSamples.notification(9, signer: ServeSamples.forger)
            let rejected = try server.exchange("POST", "/notifications", body: forged)
            #expect(rejected.status == 200 && rejected.text.contains("rejected"))
            #expect(try server.exchange("GET", "/customers/704000000000080001", headers: auth).status == 200)
            #expect(try server.exchange("GET", "/customers/none", headers: auth).status == 404)
            // An empty history page is acknowledged with an `empty` line, and counted so.
            let empty = try server.exchange("POST", "/transactions", body: #"{"signedTransactions":[]}"#, headers: auth)
            #expect(empty.status == 200 && empty.text.contains(#""result":"empty""#), "\(empty.text)")

            let response = try server.exchange("GET", "/metrics", headers: auth)
            #expect(response.status == 200)
            #expect(response.text.hasPrefix("# HELP "))
            let (types, samples, problems) = Self.parse(response.text)
            #expect(problems.isEmpty, "\(problems)")
            func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
                samples.first { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }?.value
            }
            #expect(types["entitlements_http_requests_total"] == "counter")
            #expect(types["entitlements_http_request_duration_seconds"] == "histogram")
            #expect(types["entitlements_ingest_results_total"] == "counter")
            #expect(value("entitlements_http_requests_total", ["route": "/notifications", "method": "POST", "status": "200"]) == 2)
            #expect(value("entitlements_http_requests_total", ["route": "/customers/{id}", "method": "GET", "status": "404"]) == 1)
            #expect(value("entitlements_http_requests_total", ["route": "/metrics", "method": "GET", "status": "401"]) == 1)
            #expect(value("entitlements_ingest_results_total", ["kind": "notification", "result": "appended", "code": ""]) == 1)
            let rejectedCount = samples.filter { $0.name == "entitlements_ingest_results_total" && $0.labels["result"] == "rejected" && !($0.labels["code"] ?? "").isEmpty }
            #expect(rejectedCount.map(\.value) == [1], "\(rejectedCount)")
            #expect(value("entitlements_ingest_results_total", ["result": "empty"]) == 1)
            // The histogram: cumulative buckets ending at +Inf, which equals the count.
            let buckets = samples.filter { $0.name == "entitlements_http_request_duration_seconds_bucket" && $0.labels["route"] == "/notifications" }
            #expect(buckets.count == 17)
            #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.value <= $1.value })
            #expect(buckets.last?.labels["le"] == "+Inf" && buckets.last?.value == 2)
            #expect(value("entitlements_http_request_duration_seconds_count", ["route": "/notifications"]) == 2)
            #expect(value("entitlements_log_events") == 1)
            #expect(value("entitlements_customers") == 1)
            #expect((value("entitlements_database_bytes") ?? 0) > 0)
            #expect(value("entitlements_active_subscriptions", ["period": "paid"]) == 1)
            #expect(value("entitlements_active_subscriptions", ["period": "trial"]) == 0)
            #expect(value("entitlements_mrr", ["currency": "USD"]) == 9.99)

            // The referee: Prometheus's own Python parser reads the same exposition.
            if PrometheusReferee.isAvailable {
                let file = workspace.url("exposition.txt")
                try Data(response.text.utf8).write(to: file)
                let script = workspace.url("parse.py")
                try Data(PrometheusReferee.script.utf8).write(to: script)
                let parsed = PrometheusReferee.run(["python3", script.path, file.path])
                #expect(parsed.status == 0, "\(parsed.stderr)")
                let lines = parsed.stdout.split(separator: "\n").map(String.init)
                #expect(lines.contains("# family\tentitlements_http_request_duration_seconds\thistogram"))
                #expect(lines.contains("# family\tentitlements_http_requests\tcounter"))
                #expect(lines.contains("# family\tentitlements_mrr\tgauge"))
                #expect(lines.contains("entitlements_mrr\t{\"currency\": \"USD\"}\t9.99"), "\(lines.filter { $0.hasPrefix("entitlements_mrr") })")
                #expect(lines.contains("entitlements_customers\t{}\t1.0"))
                let sampleLines = lines.filter { !$0.hasPrefix("#") }
                #expect(sampleLines.count == samples.count, "the referee read \(sampleLines.count) samples, the Swift side \(samples.count)")
            }
        }

        @Test("GET /metrics/summary and GET /revenue answer metrics and revenue as JSON")
        func summaryAndRevenue() throws {
            let now = Engine.now()
            let workspace = try Workspace(name: "serve-summary", environment: "Production")
            let server = try TestServer(token: Self.token, workspace: workspace)
            let auth = ["Authorization: Bearer \(Self.token)"]
            #expect(try server.exchange("POST", "/notifications", body: Self.subscription(now: now)).status == 200)
            let from = now - 3 * Self.day
            let summary = try server.exchange("GET", "/metrics/summary?from=\(from)&to=\(now)&interval=day", headers: auth)
            #expect(summary.status == 200)
            let json = try JSONParser().parse(Array(summary.text.utf8))
            let expected = try server.engine.metrics(from: from, to: now, interval: .day)
            #expect(json["intervals"] == .array(expected.json()))
            guard case .array(let intervals)? = json["intervals"] else { Issue.record("no intervals"); return }
            #expect(intervals.count == 4)
            #expect(intervals.last?["activeSubscriptions"] == 1)
            #expect(try server.exchange("GET", "/metrics/summary?from=\(now)&to=\(from)", headers: auth).text.contains("INVALID_RANGE"))
            #expect(try server.exchange("GET", "/metrics/summary?from=\(now)&to=\(from)", headers: auth).status == 400)
            #expect(try server.exchange("GET", "/metrics/summary?from=\(from)", headers: auth).status == 400)
            #expect(try server.exchange("GET", "/metrics/summary?from=\(from)&to=\(now)&interval=year", headers: auth).status == 400)
            #expect(try server.exchange("GET", "/metrics/summary?from=\(from)&to=\(now)").status == 401)

            let revenue = try server.exchange("GET", "/revenue", headers: auth)
            #expect(revenue.status == 200)
            let ledger = try JSONParser().parse(Array(revenue.text.utf8))
            #expect(ledger["lines"] == .array(try server.engine.revenue().json()))
            guard case .array(let lines)? = ledger["lines"] else { Issue.record("no lines"); return }
            #expect(lines.count == 1)
            #expect(lines.first?["storefront"] == "USA")
            #expect(lines.first?["reportingAmount"] == 9990)
            #expect(try server.exchange("GET", "/revenue?from=\(now)", headers: auth).text.contains(#""lines":[]"#))
            #expect(try server.exchange("GET", "/revenue").status == 401)
        }
    }
}
