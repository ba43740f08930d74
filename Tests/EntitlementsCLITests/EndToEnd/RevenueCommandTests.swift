import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `revenue` and `metrics` (specification section 14) through the command line and the
/// library, on signed Production data, with an exchange-rate file.
@Suite struct RevenueCommandTests {
    static let day: Int64 = 86_400_000
    /// 2025-01-01T00:00:00Z.
    static let january = TestPayloads.january2025
    static let february = CivilTime.millis(year: 2025, month: 2, day: 1)
    static let march = CivilTime.millis(year: 2025, month: 3, day: 1)

    /// A folder with a Production configuration whose `revenue` section reads `rates` (as rates.csv).
    static func folder(rates: String, revenue: JSONValue? = nil) throws -> URL {
        let folder = E2E.folder()
        try Data(E2E.pki.rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        guard case .object(var config) = Scenario.configJSON(environment: "Production", rules: E2E.rules.canonicalJSON) else {
            fatalError("the configuration is not an object")
        }
        config["revenue"] =
            revenue ?? ["reportingCurrency": "USD", "exchangeRates": "rates.csv", "smallBusinessProgram": false]
        try Data(JSONWriter.string(.object(config)).utf8).write(to: folder.appendingPathComponent("config.json"))
        try Data(rates.utf8).write(to: folder.appendingPathComponent("rates.csv"))
        return folder
    }

    static let rates = "date,currency,rate\n2025-01-01,EUR,1.0843\n2025-02-01,EUR,1.1\n"

    /// A monthly subscription in EUR bought in France on January 10 and renewed on February 9,
    /// its first period refunded (prorated) in February; a lifetime purchase in JPY (no rate).
    static func documents() -> [String] {
        let otid = "2000000000070001"
        let app = "704000000000070001"
        var documents: [String] = []
        let first = TestPayloads.transaction(
            transactionId: otid, originalTransactionId: otid, appTransactionId: app, purchaseDate: january + 9 * day,
            expiresDate: january + 39 * day, environment: "Production", price: 9_990, currency: "EUR", storefront: "FRA")
        documents.append(E2E.notification("SUBSCRIBED", signed: january + 9 * day + 10, transaction: first, environment: "Production"))
        let second = TestPayloads.transaction(
            transactionId: "2000000000070002", originalTransactionId: otid, appTransactionId: app, purchaseDate: january + 39 * day,
            expiresDate: january + 67 * day, environment: "Production", price: 9_990, currency: "EUR", storefront: "FRA")
        documents.append(E2E.notification("DID_RENEW", signed: january + 39 * day + 10, transaction: second, environment: "Production"))
        let refunded = TestPayloads.transaction(
            transactionId: otid, originalTransactionId: otid, appTransactionId: app, purchaseDate: january + 9 * day,
            expiresDate: january + 39 * day, signedDate: february + 4 * day, revocationDate: february + 4 * day,
            revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, environment: "Production", price: 9_990,
            currency: "EUR", storefront: "FRA")
        documents.append(E2E.notification("REFUND", signed: february + 4 * day + 10, transaction: refunded, environment: "Production"))
        let yen = TestPayloads.transaction(
            transactionId: "3000000000070003", appTransactionId: "704000000000070002", productId: "com.example.lifetime",
            type: "Non-Consumable", purchaseDate: january + 20 * day, expiresDate: nil, environment: "Production",
            price: 1_200_000, currency: "JPY", storefront: "JPN")
        documents.append(TestPayloads.body(signedTransactionInfo: E2E.pki.sign(yen)))
        return documents
    }

    @Test func theLedgerAndTheMetricsOfSignedData() throws {
        let folder = try Self.folder(rates: Self.rates)
        let config = folder.appendingPathComponent("config.json").path
        let db = folder.appendingPathComponent("revenue.sqlite").path
        let ingest = try E2E.run(["ingest", "--db", db, "--config", config], stdin: Self.documents().joined(separator: "\n") + "\n")
        #expect(ingest.status == 0, "\(ingest.stdout) \(ingest.stderr)")

        // Ingest kept each customer's revenue facts beside its projection.
        if let tool = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = [
                db, "SELECT count(*) FROM customer_rows r JOIN projections p USING (customer_key) WHERE r.revenue_seq = p.last_event_seq",
            ]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(text)")
        } else {
            Issue.record("the sqlite3 tool is not installed (apt-get install sqlite3); .ci/run installs it")
        }

        let revenue = try E2E.run(["revenue", "--db", db, "--config", config])
        #expect(revenue.status == 0, "\(revenue.stderr)")
        let lines = revenue.lines
        #expect(lines.map { $0["type"] } == ["sale", "sale", "refund", "sale"])
        #expect(lines.map { $0["transactionId"] } == ["2000000000070001", "3000000000070003", "2000000000070001", "2000000000070002"])
        let sale = lines[0]
        #expect(sale["at"] == .int(Self.january + 9 * Self.day))
        #expect(sale["originalTransactionId"] == "2000000000070001")
        #expect(sale["appTransactionId"] == "704000000000070001")
        #expect(sale["productId"] == "com.example.pro.monthly")
        #expect(sale["storefront"] == "FRA")
        #expect(sale["currency"] == "EUR")
        #expect(sale["amount"] == 9990)
        #expect(sale["reportingAmount"] == 10832)  // 9990 x 1.0843 = 10832.157
        #expect(sale["commissionRate"] == .double(0.3))
        #expect(sale["proceeds"] == 7582)  // 10832 x 0.7 = 7582.4
        // The JPY line has no rate: null, and one warning for the currency.
        #expect(lines[1]["reportingAmount"] == .null && lines[1]["proceeds"] == .null)
        #expect(lines[1]["storefront"] == "JPN")
        #expect(revenue.stderr.components(separatedBy: "no exchange rate for JPY").count == 2, "\(revenue.stderr)")
        // The refund in February, at February's rate: -4995 x 1.1 = -5494.5 -> -5495.
        #expect(lines[2]["amount"] == -4995)
        #expect(lines[2]["reportingAmount"] == -5495)
        #expect(lines[2]["proceeds"] == -3847)  // -3846.5 -> -3847
        #expect(lines[3]["reportingAmount"] == 10989)
        let keys: [String] = {
            guard case .object(let object) = sale else { return [] }
            return object.keys
        }()
        #expect(
            keys == [
                "at", "type", "transactionId", "originalTransactionId", "appTransactionId", "productId", "storefront", "currency",
                "amount", "reportingAmount", "commissionRate", "proceeds",
            ])
        // --from and --to select [from, to).
        let february = try E2E.run(
            ["revenue", "--db", db, "--config", config, "--from", String(Self.february), "--to", "2025-03-01T00:00:00Z"])
        #expect(february.lines.map { $0["type"] } == ["refund", "sale"])

        let metrics = try E2E.run(
            ["metrics", "--db", db, "--config", config, "--from", "2025-01-01T00:00:00Z", "--to", "2025-03-15T00:00:00Z"])
        #expect(metrics.status == 0, "\(metrics.stderr)")
        let months = metrics.lines
        #expect(months.count == 3)
        #expect(months.map { $0["from"] } == [.int(Self.january), .int(Self.february), .int(Self.march)])
        #expect(months.last?["to"] == .int(CivilTime.millis(year: 2025, month: 3, day: 15)))
        let februaryRevenue: Int64 = -5495 + 10989
        #expect(months.map { $0["revenue"] } == [.int(10832), .int(februaryRevenue), .int(0)])
        let februaryProceeds: Int64 = -3847 + 7692
        #expect(months.map { $0["proceeds"] } == [.int(7582), .int(februaryProceeds), .int(0)])
        #expect(months.map { $0["refunds"] } == [0, 1, 0])
        #expect(months.map { $0["newSubscriptions"] } == [1, 0, 0])
        #expect(months.map { $0["activeSubscriptions"] } == [1, 1, 0])
        // MRR at January's end: the first period's 10832; at February's end the renewal's 10989.
        #expect(months.map { $0["mrr"] } == [10832, 10989, 0])
        #expect(months.map { $0["expirations"] } == [0, 0, 1])
        guard case .object(let first) = months[0] else { Issue.record("not an object"); return }
        #expect(
            first.keys == [
                "from", "to", "activeSubscriptions", "activeTrials", "mrr", "newSubscriptions", "newTrials", "trialConversions",
                "expirations", "expirationsVoluntary", "refunds", "revenue", "proceeds",
            ])

        // The library twins give the same figures; a replay changes none of them.
        let engine = try Engine(configuration: EngineConfiguration.load(path: config), databasePath: db)
        let answer = try engine.metrics(from: Self.january, to: CivilTime.millis(year: 2025, month: 3, day: 15))
        #expect(answer.json() == months)
        #expect(answer.currenciesWithoutRate == ["JPY"])
        #expect(try engine.revenue().json() == lines)
        _ = try engine.replay()
        #expect(try engine.metrics(from: Self.january, to: CivilTime.millis(year: 2025, month: 3, day: 15)).json() == months)
        let weeks = try E2E.run(
            ["metrics", "--db", db, "--config", config, "--from", "2025-01-01T00:00:00Z", "--to", "2025-03-15T00:00:00Z", "--interval", "week"])
        #expect(weeks.lines.count == 11)  // Wed Jan 1 cut, then Mondays up to Mar 10, cut at Mar 15
        #expect(weeks.lines.map { line -> Int64 in
            if case .int(let value)? = line["revenue"] { return value }
            return 0
        }.reduce(0, +) == 10832 + februaryRevenue)
    }

    @Test func metricsAnswerUnderTheDatabasesRulesWhateverTheConfigurationSays() throws {
        let folder = try Self.folder(rates: Self.rates)
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("db.sqlite").path
        let config = folder.appendingPathComponent("config.json").path
        // Other rules: the monthly product is sold as a year's price.
        guard case .object(var document) = try JSONParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: config)))),
            case .object(var rules)? = document["rules"], case .object(var products)? = rules["products"],
            case .object(var monthly)? = products["com.example.pro.monthly"]
        else {
            Issue.record("the configuration is not as expected")
            return
        }
        monthly["period"] = "P1Y"
        products["com.example.pro.monthly"] = .object(monthly)
        rules["products"] = .object(products)
        rules["version"] = "yearly-prices"
        document["rules"] = .object(rules)
        let yearly = folder.appendingPathComponent("yearly.json").path
        try Data(JSONWriter.string(.object(document)).utf8).write(to: URL(fileURLWithPath: yearly))

        let engine = try Engine(configuration: EngineConfiguration.load(path: config), databasePath: db)
        _ = try engine.ingest(Self.documents().map { InputBytes($0) })
        let to = CivilTime.millis(year: 2025, month: 3, day: 15)
        let months = try engine.metrics(from: Self.january, to: to).json()
        let other = try Engine(configuration: EngineConfiguration.load(path: yearly), databasePath: db)
        #expect(try other.metrics(from: Self.january, to: to).json() == months)
        // Once a replay applies the other rules, every process answers under them.
        _ = try other.replay()
        let yearlyMonths = try engine.metrics(from: Self.january, to: to).json()
        #expect(yearlyMonths != months)
        // January's MRR: a year's price over twelve months, not the month's 10832.
        guard case .int(let mrr)? = yearlyMonths[0]["mrr"] else {
            Issue.record("no mrr")
            return
        }
        #expect(abs(mrr - 10832 / 12) <= 1)
        #expect(try other.metrics(from: Self.january, to: to).json() == yearlyMonths)
    }

    @Test func badInputIsAPreciseUsageError() throws {
        let good = try Self.folder(rates: Self.rates)
        let config = good.appendingPathComponent("config.json").path
        let db = good.appendingPathComponent("revenue.sqlite").path
        _ = try E2E.run(["ingest", "--db", db, "--config", config], stdin: Self.documents()[0] + "\n")

        let after = try E2E.run(["metrics", "--db", db, "--config", config, "--from", "2025-03-01T00:00:00Z", "--to", "2025-01-01T00:00:00Z"])
        #expect(after.status == 2)
        #expect(after.stderr.contains("INVALID_RANGE") && after.stderr.contains("is after --to"), "\(after.stderr)")
        let many = try E2E.run(["metrics", "--db", db, "--config", config, "--from", "2000-01-01T00:00:00Z", "--to", "2030-01-01T00:00:00Z", "--interval", "day"])
        #expect(many.status == 2)
        #expect(many.stderr.contains("TOO_MANY_INTERVALS") && many.stderr.contains("10000"), "\(many.stderr)")
        let interval = try E2E.run(["metrics", "--db", db, "--config", config, "--from", "2025-01-01T00:00:00Z", "--to", "2025-02-01T00:00:00Z", "--interval", "year"])
        #expect(interval.status == 2)
        let missing = try E2E.run(["metrics", "--db", db, "--config", config, "--from", "2025-01-01T00:00:00Z"])
        #expect(missing.status == 2 && missing.stderr.contains("--to"))
        let seconds = try E2E.run(["revenue", "--db", db, "--config", config, "--from", "1735689600"])
        #expect(seconds.status == 2)

        for (rates, expected) in [
            ("date,currency,rate\n2025-01-01,EUR,1.0843\n2025-02-01,EUR\n", ["line 3", "date,currency,rate"]),
            ("date,currency,rate\n2025-01-01,EUR,1.0843\n2025-02-01,EUR,1,1\n", ["line 3", "found 4"]),
            ("date,currency,rate\n2025-01-01,EUR,one\n", ["line 2", "field rate"]),
            ("2025-01-01,EUR,1.0843\n2025/02/01,EUR,1.1\n", ["line 2", "field date"]),
            ("2025-01-01,EUR,0\n", ["line 1", "field rate", "zero"]),
            ("2025-01-01,EUR,-1.1\n", ["line 1", "field rate", "negative"]),
        ] {
            let folder = try Self.folder(rates: rates)
            let run = try E2E.run(["metrics", "--db", db, "--config", folder.appendingPathComponent("config.json").path, "--from", "2025-01-01T00:00:00Z", "--to", "2025-02-01T00:00:00Z"])
            #expect(run.status == 2, "\(rates)")
            for text in expected { #expect(run.stderr.contains(text), "\(text) in \(run.stderr)") }
            #expect(run.stderr.contains("revenue.exchangeRates") && run.stderr.contains("rates.csv"))
        }
        let noFile = try Self.folder(rates: "", revenue: ["reportingCurrency": "USD", "exchangeRates": "absent.csv"])
        let absent = try E2E.run(["revenue", "--db", db, "--config", noFile.appendingPathComponent("config.json").path])
        #expect(absent.status == 2 && absent.stderr.contains("absent.csv"))
        let badCurrency = try Self.folder(rates: "", revenue: ["reportingCurrency": "usd"])
        let lower = try E2E.run(["revenue", "--db", db, "--config", badCurrency.appendingPathComponent("config.json").path])
        #expect(lower.status == 2 && lower.stderr.contains("revenue.reportingCurrency"))
        let unknown = try Self.folder(rates: "", revenue: ["reportingCurrency": "USD", "rates": "x.csv"])
        let field = try E2E.run(["revenue", "--db", db, "--config", unknown.appendingPathComponent("config.json").path])
        #expect(field.status == 2 && field.stderr.contains("revenue.rates"))
    }
}
