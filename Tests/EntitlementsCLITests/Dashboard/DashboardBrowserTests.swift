import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The dashboard in a real browser: `entitlements demo --serve` on loopback, headless
/// Chromium loading its page, the figures it shows checked against the command line's
/// answers on the same database, screenshots kept in .build/artifacts/dashboard.
@Suite(.serialized, .enabled(if: Chromium.executable != nil, "\(Chromium.missingNotice)"))
struct DashboardBrowserTests {
    /// `entitlements demo --serve`, running, with the dashboard's address and the demo's database.
    final class DemoServer {
        let running: Tool.Running
        let folder: URL
        let base: String
        let database: String
        let config: String

        init() throws {
            folder = Scenario.temporaryFolder("dashboard-demo")
            let running = try Tool.start(["demo", "--serve"], in: folder, label: "demo")
            self.running = running
            var base: String? = nil
            var database: String? = nil
            _ = running.waitUntil(timeout: 300) {
                let out = String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self)
                for line in out.split(separator: "\n") {
                    if line.hasPrefix("Dashboard: ") { base = String(line.dropFirst("Dashboard: ".count)).trimmingCharacters(in: .whitespaces) }
                    if line.hasPrefix("Database:"), let path = line.split(separator: " ").first(where: { $0.hasPrefix("/") }) { database = String(path) }
                }
                return base != nil
            }
            guard let base, let database else {
                running.kill9()
                throw DemoFailure(
                    description: "demo --serve printed no dashboard address: \(String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self).suffix(2000)) \(String(decoding: Tool.read(running.stderrURL.path), as: UTF8.self).suffix(2000))")
            }
            self.base = base.hasSuffix("/") ? String(base.dropLast()) : base
            self.database = database
            config = URL(fileURLWithPath: database).deletingLastPathComponent().appendingPathComponent("config.json").path
        }

        /// `entitlements COMMAND --db <demo db> --config <demo config> ARGUMENTS`, parsed as JSON lines.
        func cli(_ command: String, _ arguments: [String]) throws -> [JSONValue] {
            let run = try Tool.run([command, "--db", database, "--config", config] + arguments, in: folder, timeout: 120)
            #expect(run.status == 0, "\(command) \(arguments): \(run.stderr)")
            return try run.lines.map { try JSONParser().parse(Array($0.utf8)) }
        }

        /// Stops it with SIGINT; its exit status.
        func stop() -> Int32 {
            kill(running.pid, SIGINT)
            return running.wait(timeout: 60).status
        }
    }

    static func string(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: return text
        case .int(let number)?: return String(number)
        case .bool(let flag)?: return String(flag)
        default: return nil
        }
    }

    /// `2026-11-23 10:00`, as the page shows times (UTC).
    static func shown(_ ms: Int64) -> String {
        String(TimeArgument.iso8601(ms).prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    @Test("the demo's dashboard: the overview, each tour customer as query answers it, found by its other ids, screenshots at 1280 and 360 px")
    func demoDashboard() throws {
        let demo = try DemoServer()
        defer { #expect(demo.stop() == 0, "demo --serve exits 0 on SIGINT") }

        // The overview, with the webhook and rejection sections (the demo configures no webhook, rejects nothing).
        let overview = try Chromium.dumpDOM(demo.base + "/#/")
        #expect(overview.contains(#"data-state="ready""#), "\(overview.suffix(3000))")
        #expect(overview.contains("Webhook endpoints") && overview.contains("No webhook endpoint is configured."))
        #expect(overview.contains("Latest rejected inputs") && overview.contains("Nothing was rejected."))
        #expect(!overview.contains("could not be reached"), "\(overview.suffix(3000))")

        try checkOverview(demo)

        let tour = DemoTour.customers
        #expect(tour.count >= 3)
        for id in tour {
            let dom = try Chromium.dumpDOM(demo.base + "/#/customer/\(id)")
            #expect(dom.contains(#"data-state="ready""#), "\(id): \(dom.suffix(2000))")
            let view = try #require(demo.cli("query", ["--app-transaction-id", id]).first)
            // An `otid:` key answers as the customer it merged into.
            let key = try #require(Self.string(view["appTransactionId"]))
            #expect(dom.contains(#"data-field="appTransactionId">\#(key)<"#), "\(id) as \(key)")

            // Every entitlement, with its state and end, as query gives it.
            guard case .object(let entitlements)? = view["entitlements"] else { Issue.record("\(id): no entitlements in \(view)"); continue }
            let rows = Chromium.tags(in: dom, with: "data-entitlement=")
            #expect(rows.count == entitlements.members.count, "\(id): \(rows)")
            for (name, entitlement) in entitlements.members {
                guard let row = rows.first(where: { Chromium.attribute("data-entitlement", of: $0) == name }) else {
                    Issue.record("\(id): entitlement \(name) not shown")
                    continue
                }
                #expect(Chromium.attribute("data-active", of: row) == Self.string(entitlement["active"]), "\(id) \(name)")
                #expect(Chromium.attribute("data-expires", of: row) == (Self.string(entitlement["expiresDate"]) ?? ""), "\(id) \(name)")
                if case .int(let expires)? = entitlement["expiresDate"], let text = Chromium.text(of: row, in: dom) {
                    #expect(text.contains(Self.shown(expires)), "\(id) \(name): \(text)")
                }
            }
            // Every subscription with its status.
            if case .array(let subscriptions)? = view["subscriptions"] {
                let shownRows = Chromium.tags(in: dom, with: "data-subscription=")
                #expect(shownRows.count == subscriptions.count, "\(id)")
                for subscription in subscriptions {
                    let otid = Self.string(subscription["originalTransactionId"])
                    let row = shownRows.first { Chromium.attribute("data-subscription", of: $0) == otid }
                    #expect(row.flatMap { Chromium.attribute("data-status", of: $0) } == Self.string(subscription["status"]), "\(id) \(otid ?? "")")
                }
            }
            // Balances.
            if case .object(let balances)? = view["balances"] {
                for (currency, amount) in balances.members {
                    let row = Chromium.tags(in: dom, with: #"data-balance="\#(currency)""#).first
                    #expect(row.flatMap { Chromium.attribute("data-value", of: $0) } == Self.string(amount), "\(id) \(currency)")
                }
            }
            // The timeline: one row of the change table per history line.
            let history = try demo.cli("history", ["--app-transaction-id", key])
            #expect(dom.contains("data-timeline"), "\(id)")
            #expect(Chromium.tags(in: dom, with: "data-at=").count == history.count, "\(id)")
            // The lifecycle events of the customer, as the feed records them.
            var keys: Set<String> = [key]
            if case .array(let subscriptions)? = view["subscriptions"] {
                for subscription in subscriptions { if let otid = Self.string(subscription["originalTransactionId"]) { keys.insert("otid:" + otid) } }
            }
            let events = try demo.cli("lifecycle", []).filter { Self.string($0["appTransactionId"]).map(keys.contains) == true }
            let shownEvents = Chromium.tags(in: dom, with: "data-event=").compactMap { Chromium.attribute("data-event", of: $0) }
            #expect(Set(shownEvents) == Set(events.compactMap { Self.string($0["id"]) }), "\(id)")
        }

        // Found by another id: the find route lands on the customer's page.
        let first = tour[0]
        let view = try #require(demo.cli("query", ["--app-transaction-id", first]).first)
        if case .array(let subscriptions)? = view["subscriptions"], let otid = Self.string(subscriptions.first?["originalTransactionId"]) {
            let dom = try Chromium.dumpDOM(demo.base + "/#/find/\(otid)")
            #expect(dom.contains(#"data-field="appTransactionId">\#(first)<"#), "found by originalTransactionId \(otid): \(dom.suffix(2000))")
        }
        if let token = Self.string(view["appAccountToken"]) {
            let dom = try Chromium.dumpDOM(demo.base + "/#/find/\(token)")
            #expect(dom.contains(#"data-field="appTransactionId">\#(first)<"#), "found by appAccountToken \(token)")
        }
        let missing = try Chromium.dumpDOM(demo.base + "/#/find/no-such-id")
        #expect(missing.contains(#"data-found="none""#), "\(missing.suffix(2000))")

        // Screenshots, kept as artifacts.
        for (name, route) in [("overview", "/#/"), ("customer", "/#/customer/\(first)")] {
            for (width, height) in [(1280, 900), (360, 800)] {
                let file = Chromium.artifacts.appendingPathComponent("\(name)-\(width).png")
                try Chromium.screenshot(demo.base + route, width: width, height: height, to: file)
                let bytes = Tool.read(file.path)
                #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(file.path) is a PNG")
                #expect(bytes.count > 5_000, "\(file.path): \(bytes.count) bytes")
            }
        }
    }
}

struct DemoFailure: Error, CustomStringConvertible {
    var description: String
}

/// The customers of the demo's tour (Fixtures/demo/tour.json).
enum DemoTour {
    static let customers: [String] = {
        let url = Scenario.packageRoot.appendingPathComponent("Fixtures/demo/tour.json")
        guard case .array(let entries)? = try? JSONParser().parse(Tool.read(url.path)) else { return [] }
        return entries.compactMap { entry in
            if case .string(let id)? = entry["appTransactionId"] { return id }
            return nil
        }
    }()
}

extension DashboardBrowserTests {
    /// The overview as of a fixed moment against `metrics` on the same database: the figures
    /// now, the 30 days' sums and every month of the table. A server without metrics says
    /// "not available", and then the command line has no `metrics` either.
    func checkOverview(_ demo: DemoServer) throws {
        let at = try TimeArgument.parse("2026-11-20T12:00:00Z")
        let monthsFrom = try TimeArgument.parse("2025-12-01T00:00:00Z")
        let daysFrom = try TimeArgument.parse("2026-10-22T00:00:00Z")
        let dom = try Chromium.dumpDOM(demo.base + "/#/overview/\(at)")
        #expect(dom.contains(#"data-state="ready""#), "\(dom.suffix(2000))")
        if dom.contains(#"data-metrics="not-available""#) {
            let run = try Tool.run(["metrics", "--help"], in: demo.folder, timeout: 60)
            #expect(run.status != 0, "the command line has metrics, the server does not")
            return
        }
        let months = try demo.cli("metrics", ["--from", String(monthsFrom), "--to", String(at), "--interval", "month"])
        let days = try demo.cli("metrics", ["--from", String(daysFrom), "--to", String(at), "--interval", "day"])
        #expect(months.count == 12 && days.count == 30, "\(months.count) months, \(days.count) days")
        let tiles = Chromium.tags(in: dom, with: "data-metric=")
        func tile(_ name: String) -> String? {
            tiles.first { Chromium.attribute("data-metric", of: $0) == name }.flatMap { Chromium.attribute("data-value", of: $0) }
        }
        let current = try #require(months.last)
        for key in ["mrr", "activeSubscriptions", "activeTrials"] {
            #expect(tile(key) == Self.string(current[key]), "\(key): shown \(tile(key) ?? "nothing"), metrics \(current[key] ?? .null)")
        }
        for key in ["expirations", "refunds"] {
            let sum = days.reduce(Int64(0)) { total, line in
                if case .int(let value)? = line[key] { return total + value }
                return total
            }
            #expect(tile(key + "30d") == String(sum), "\(key) over 30 days")
        }
        if case .int(let mrr)? = current["mrr"], let shown = tiles.first(where: { Chromium.attribute("data-metric", of: $0) == "mrr" }) {
            let text = Chromium.text(of: shown, in: dom) ?? ""
            let units = String(format: "%.2f", Double(mrr) / 1000)
            #expect(text.replacingOccurrences(of: ",", with: "").contains(units), "MRR shown as \(text), metrics \(mrr) milli-units")
        }
        let rows = Chromium.tags(in: dom, with: "data-from=")
        #expect(rows.count == months.count)
        for line in months {
            let row = rows.first { Chromium.attribute("data-from", of: $0) == Self.string(line["from"]) }
            for key in ["mrr", "activeSubscriptions", "activeTrials", "expirations", "refunds"] {
                #expect(row.flatMap { Chromium.attribute("data-" + key.lowercased(), of: $0) } == Self.string(line[key]), "\(key) of \(line["from"] ?? .null)")
            }
        }
        #expect(Chromium.tags(in: dom, with: "data-chart=").count == 10, "five charts by month, five by day")
    }
}

/// `demo --serve` without a browser: it serves the demo's database until SIGINT, and refuses bad addresses.
@Suite struct DemoServeTests {
    @Test("demo --serve prints the dashboard's address last, serves the page and the query API there, and exits 0 on SIGINT")
    func servesUntilInterrupted() throws {
        let demo = try DashboardBrowserTests.DemoServer()
        let port = try #require(Int(demo.base.split(separator: ":").last ?? ""))
        let out = String(decoding: Tool.read(demo.running.stdoutURL.path), as: UTF8.self)
        #expect(out.hasSuffix("Dashboard: \(demo.base)/\n"), "\(out.suffix(300))")
        let page = try RawClient.exchange(port: port, "GET", "/")
        #expect(page.status == 200 && page.text.contains("<title>entitlements</title>"))
        let customer = try RawClient.exchange(port: port, "GET", "/customers/\(DemoTour.customers[0])")
        #expect(customer.status == 200)
        let folder = URL(fileURLWithPath: demo.database).deletingLastPathComponent()
        #expect(demo.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the temporary folder is removed")
    }

    @Test("--listen beyond loopback, malformed, or without --serve is a usage error (exit 2)")
    func badListen() throws {
        let folder = Scenario.temporaryFolder("demo-listen")
        for arguments in [["--serve", "--listen", "0.0.0.0:0"], ["--serve", "--listen", "nowhere"], ["--listen", "127.0.0.1:0"]] {
            let run = try Tool.run(["demo"] + arguments, in: folder, timeout: 120)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains("--listen"), "\(arguments): \(run.stderr)")
        }
        let help = try Tool.run(["demo", "--help"], in: folder, timeout: 60)
        #expect(help.stdout.contains("--serve") && help.stdout.contains("--listen"))
    }
}
