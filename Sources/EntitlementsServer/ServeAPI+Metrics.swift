import Entitlements
import Foundation
import HTTPServer

/// `GET /metrics` (Prometheus), `GET /metrics/summary` and `GET /revenue` (specification section 14).
extension ServeAPI {
    /// `GET /metrics`: the server's counters, the webhooks' positions, the log's size, the
    /// customers, active subscriptions and MRR, in Prometheus's text format.
    func prometheus() -> ServerResponse {
        var out = PrometheusText()
        counters.write(to: &out)
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            try webhookMetrics(&out)
            let statistics = try engine.statistics()
            out.family("entitlements_log_events", type: "gauge", help: "Events in the log (the seq of the last one).")
            out.sample("entitlements_log_events", [], statistics.events)
            out.family("entitlements_database_bytes", type: "gauge", help: "Size of the database file and its write-ahead log, in bytes.")
            out.sample("entitlements_database_bytes", [], statistics.databaseBytes)
            out.family("entitlements_customers", type: "gauge", help: "Customers (appTransactionIds and unlinked otid: customers).")
            out.sample("entitlements_customers", [], statistics.customers)
            out.family(
                "entitlements_active_subscriptions", type: "gauge",
                help: "Production auto-renewable subscriptions owned PURCHASED that are active or in grace now, by period (paid or trial).")
            out.sample("entitlements_active_subscriptions", [("period", "paid")], statistics.activeSubscriptions)
            out.sample("entitlements_active_subscriptions", [("period", "trial")], statistics.activeTrials)
            let currency = engine.configuration.revenue.reportingCurrency
            out.family(
                "entitlements_mrr", type: "gauge",
                help: "Monthly recurring revenue now, in units (not milliunits) of the reporting currency.")
            out.sample("entitlements_mrr", [("currency", currency)], Double(statistics.mrr) / 1000)
        } catch {
            return Self.unavailable(error)
        }
        out.family("entitlements_process_start_time_seconds", type: "gauge", help: "When this server started, in seconds since 1970.")
        out.sample("entitlements_process_start_time_seconds", [], counters.started.rounded(.down))
        return ServerResponse(
            status: 200, fields: [HTTPField(name: "Content-Type", value: PrometheusText.contentType)], body: Array(out.text.utf8))
    }

    /// Each webhook endpoint's position per feed: delivered, lag, failures.
    private func webhookMetrics(_ out: inout PrometheusText) throws(EngineError) {
        guard !engine.configuration.webhooks.isEmpty else { return }
        let statuses = try engine.webhookStatus()
        let now = Engine.now()
        func labels(_ status: WebhookStatus) -> [(String, String)] { [("endpoint", status.url), ("feed", status.feed.rawValue)] }
        out.family(
            "entitlements_webhook_delivered_cursor", type: "gauge",
            help: "The last feed cursor delivered (or given up on) per webhook endpoint and feed.")
        for status in statuses { out.sample("entitlements_webhook_delivered_cursor", labels(status), status.deliveredCursor) }
        out.family("entitlements_webhook_lag_lines", type: "gauge", help: "Feed lines not yet delivered per webhook endpoint and feed.")
        for status in statuses { out.sample("entitlements_webhook_lag_lines", labels(status), status.lag) }
        out.family(
            "entitlements_webhook_failing_seconds", type: "gauge",
            help: "Seconds since the first failed attempt at the line an endpoint is stuck on (0 when none).")
        for status in statuses {
            let since = status.failingSince.map { Double(max(0, now - $0)) / 1000 } ?? 0
            out.sample("entitlements_webhook_failing_seconds", labels(status), since)
        }
        out.family("entitlements_webhook_attempts", type: "gauge", help: "Attempts made at the line an endpoint is stuck on.")
        for status in statuses { out.sample("entitlements_webhook_attempts", labels(status), Int64(status.attempts)) }
        out.family("entitlements_webhook_failed_lines", type: "gauge", help: "Lines given up on after 24 hours of retries.")
        for status in statuses { out.sample("entitlements_webhook_failed_lines", labels(status), Int64(status.failedLines)) }
    }

    /// A `from`/`to` query parameter: milliseconds or ISO 8601 UTC.
    private static func time(_ parameters: [String: String], _ name: String) -> Result<Int64?, Refusal> {
        guard let text = parameters[name] else { return .success(nil) }
        do {
            return .success(try TimeArgument.parse(text))
        } catch {
            return .failure(Refusal(response: badRequest(name + " " + String(error.message.prefix(300)))))
        }
    }

    /// `GET /metrics/summary?from=T&to=T[&interval=day|week|month]`: `{"intervals": [...], "currenciesWithoutRate": [...]}`.
    func metricsSummary(_ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where !["from", "to", "interval"].contains(name) {
            return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected from, to, interval)")
        }
        let from: Int64?
        let to: Int64?
        switch (Self.time(parameters, "from"), Self.time(parameters, "to")) {
        case (.failure(let refusal), _), (_, .failure(let refusal)): return refusal.response
        case (.success(let f), .success(let t)):
            from = f
            to = t
        }
        guard let from, let to else { return Self.badRequest("from and to are required (milliseconds since 1970 or ISO 8601 UTC)") }
        var interval = MetricsInterval.month
        if let text = parameters["interval"] {
            guard let parsed = MetricsInterval(rawValue: text) else {
                return Self.badRequest("interval expects day, week or month, got \"\(text.prefix(40))\"")
            }
            interval = parsed
        }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let answer = try engine.metrics(from: from, to: to, interval: interval)
            return Self.json(200, ["intervals": .array(answer.json()), "currenciesWithoutRate": .array(answer.currenciesWithoutRate.map(JSONValue.string))])
        } catch {
            if error.code == .invalidRange || error.code == .tooManyIntervals {
                return .error(400, code: error.code.rawValue, message: error.message)
            }
            return Self.unavailable(error)
        }
    }

    /// `GET /revenue[?from=T][&to=T]`: `{"lines": [...], "currenciesWithoutRate": [...]}`.
    func revenue(_ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "from" && name != "to" {
            return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected from, to)")
        }
        let from: Int64?
        let to: Int64?
        switch (Self.time(parameters, "from"), Self.time(parameters, "to")) {
        case (.failure(let refusal), _), (_, .failure(let refusal)): return refusal.response
        case (.success(let f), .success(let t)):
            from = f
            to = t
        }
        if let from, let to, from > to { return .error(400, code: "INVALID_RANGE", message: "from is after to") }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let answer = try engine.revenue(from: from, to: to)
            return Self.json(200, ["lines": .array(answer.json()), "currenciesWithoutRate": .array(answer.currenciesWithoutRate.map(JSONValue.string))])
        } catch {
            return Self.unavailable(error)
        }
    }
}
