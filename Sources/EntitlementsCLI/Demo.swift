import DemoFixtures
import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation

/// `entitlements demo`: the bundled sample histories, ingested into a fresh
/// database in a temporary folder, and a short account of each customer.
/// With `--keep DIR`, the database, its configuration and the samples stay in
/// `DIR` to explore with the other commands.
enum Demo {
    /// The files `--keep` leaves, beside `demo.sqlite`.
    static let keptSamples = ["config.json", "test-root.pem", "histories.ndjson", "tour.json"]

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "demo", valued: ["--keep", "--listen"], switches: ["--serve"])
        if let extra = arguments.positional.first { throw UsageError(message: "demo takes no arguments but --keep DIR and --serve (got \(extra))", command: "demo") }
        var kept: URL? = nil
        if let keep = arguments.values["--keep"] {
            guard !keep.isEmpty else { throw UsageError(message: "--keep needs a folder", command: "demo") }
            let folder = URL(fileURLWithPath: keep).standardizedFileURL
            for name in ["demo.sqlite"] + keptSamples where FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path) {
                throw UsageError(
                    message: "\(folder.appendingPathComponent(name).path) already exists: give --keep a new or empty folder (nothing was written)",
                    command: "demo")
            }
            kept = folder
        }
        return run(keep: kept, serve: try serveSettings(arguments))
    }

    static func run(keep: URL?, serve settings: ServeSettings? = nil) -> ExitCode {
        guard DemoFixtures.text("demo/config.json") != nil, let histories = DemoFixtures.text("demo/histories.ndjson")
        else {
            Output.error("entitlements demo: the samples are missing from this build (run scripts/embed-resources.sh)")
            return .storage
        }
        let workspace = keep ?? FileManager.default.temporaryDirectory.appendingPathComponent("entitlements-demo-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
            // The configuration names its root by a relative path: both go into the workspace
            // (and, kept, the samples too).
            for file in DemoFixtures.folder("demo")
            where file.name == "config.json" || file.name.hasSuffix(".pem") || (keep != nil && keptSamples.contains(file.name)) {
                try Data(file.text.utf8).write(to: workspace.appendingPathComponent(file.name))
            }
        } catch {
            Output.error("entitlements demo: cannot write to the folder \(workspace.path): \(error)")
            return keep == nil ? .storage : .usage
        }
        defer { if keep == nil { try? FileManager.default.removeItem(at: workspace) } }

        let configuration: EngineConfiguration
        let engine: Engine
        do {
            configuration = try EngineConfiguration.load(path: workspace.appendingPathComponent("config.json").path)
            engine = try Engine(configuration: configuration, databasePath: workspace.appendingPathComponent("demo.sqlite").path)
        } catch let error as ConfigurationError {
            Output.error("entitlements demo: \(error)")
            return .usage
        } catch {
            Output.error("entitlements demo: \(error)")
            return .storage
        }

        print("entitlements demo")
        print("=================")
        print("Signed samples: compiled into this program (from Fixtures/demo)")
        print("(made with a test PKI shaped like Apple's: P-384 root and intermediate, P-256 leaf;")
        print(" the demo's config.json trusts that test root instead of Apple Root CA - G3)")
        print("Database:       \(workspace.path)/demo.sqlite (\(keep == nil ? "removed afterwards" : "kept"))\n")

        // 1. Ingest.
        let lines = histories.split(separator: "\n").map { InputBytes(String($0)) }
        let results: [IngestResult]
        do {
            results = try engine.ingest(lines, workers: 2)
        } catch {
            Output.error("entitlements demo: \(error)")
            return .storage
        }
        let counts = Dictionary(grouping: results, by: \.outcome).mapValues(\.count)
        var kinds: [String: Int] = [:]
        for result in results where result.outcome == .appended { kinds[result.kind?.rawValue ?? "?", default: 0] += 1 }
        print("Ingested \(lines.count) input documents holding \(results.count) signed items: \(counts[.appended] ?? 0) appended, \(counts[.duplicate] ?? 0) duplicate, \(counts[.rejected] ?? 0) rejected")
        print("  appended by kind: " + kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        for result in results where result.outcome == .rejected {
            print("  rejected: \(result.errorCode ?? "") \(result.errorMessage ?? "")")
        }
        print("")

        // 2. Each customer at the moments worth seeing.
        for customer in tour(DemoFixtures.text("demo/tour.json") ?? "[]") {
            print("Customer \(customer.appTransactionId)")
            print("  \(customer.title)")
            for moment in customer.moments {
                guard case .customer(let view)? = try? engine.query(.appTransactionId(customer.appTransactionId), at: moment.at) else {
                    print("  \(date(moment.at))  (not found)")
                    continue
                }
                print("  \(date(moment.at))  \(moment.label)")
                if view.appTransactionId != customer.appTransactionId { print("      answers as  \(view.appTransactionId)") }
                for line in describe(view) { print("      " + line) }
            }
            print("")
        }

        refundRequestAnswered(engine)
        lifecycleShown(engine, customers: tour(DemoFixtures.text("demo/tour.json") ?? "[]").map(\.appTransactionId))

        // 3. Real Apple-signed data against the embedded Apple root.
        print("Real Apple-signed samples, verified against the embedded Apple Root CA - G3:")
        for sample in realSamples {
            guard let text = DemoFixtures.text("real/" + sample.file),
                let verifier = try? DocumentVerifier(
                    configuration: EngineConfiguration(
                        bundleId: sample.bundleId, appAppleId: sample.appAppleId, environment: sample.environment,
                        rules: configuration.rules))
            else {
                print("  \(sample.file): cannot read")
                continue
            }
            for line in verifier.verify(InputBytes(text)) {
                if case .string(let result)? = line["result"], result == "verified" {
                    print("  \(sample.file): verified (\(sample.what))")
                } else {
                    print("  \(sample.file): \(JSONWriter.string(line["error"] ?? .null))")
                }
            }
        }
        if let keep {
            try? engine.checkpoint()
            printNextSteps(keep, customers: tour(DemoFixtures.text("demo/tour.json") ?? "[]"))
        } else {
            print("\nTry it yourself: entitlements --help (or entitlements demo --keep DIR to keep this database)")
        }
        if let settings { return serveDashboard(engine, settings: settings) }
        return .success
    }

    struct Moment {
        var label: String
        var at: Int64
    }

    struct TourCustomer {
        var appTransactionId: String
        var title: String
        var moments: [Moment]
    }

    static func tour(_ text: String) -> [TourCustomer] {
        guard case .array(let entries)? = try? JSONParser().parse(Array(text.utf8))
        else { return [] }
        return entries.compactMap { entry in
            guard case .string(let id)? = entry["appTransactionId"], case .string(let title)? = entry["title"],
                case .array(let moments)? = entry["moments"]
            else { return nil }
            return TourCustomer(
                appTransactionId: id, title: title,
                moments: moments.compactMap { m in
                    guard case .string(let label)? = m["label"], case .int(let at)? = m["at"] else { return nil }
                    return Moment(label: label, at: at)
                })
        }
    }

    static func describe(_ view: CustomerView) -> [String] {
        var lines: [String] = []
        let granted = view.entitlements.map { e -> String in
            guard e.active else { return "\(e.name): no" }
            return "\(e.name): yes" + (e.expiresDate.map { " until \(date($0))" } ?? " (no end)")
        }
        lines.append("environment   " + (view.environment ?? "not recorded"))
        lines.append("entitlements  " + (granted.isEmpty ? "none" : granted.joined(separator: "; ")))
        for s in view.subscriptions {
            var text = "subscription  \(s.productId) \(s.status.rawValue)"
            if let expires = s.expiresDate { text += ", expires \(date(expires))" }
            if let grace = s.gracePeriodExpiresDate, s.status == .gracePeriod { text += ", grace until \(date(grace))" }
            if let next = s.autoRenewProductId, next != s.productId { text += ", renews as \(next)" }
            if s.ownership == "FAMILY_SHARED" { text += ", family shared" }
            if let type = s.revocationType { text += " (\(type))" }
            lines.append(text)
        }
        for p in view.purchases {
            var text = "purchase      \(p.productId) x\(p.quantity)"
            if p.revoked { text += ", revoked \(p.revocationType ?? "")" + (p.revocationPercentage.map { " \(Double($0) / 1000)%" } ?? "") }
            if let end = p.expiresDate { text += ", window ends \(date(end))" }
            lines.append(text)
        }
        if !view.balances.isEmpty {
            lines.append("balances      " + view.balances.map { "\($0.amount) \($0.currency)" }.joined(separator: ", "))
        }
        return lines
    }

    /// `2026-11-23 10:00` (UTC), by integer arithmetic (no formatter, locale or time zone data).
    static func date(_ ms: Int64) -> String {
        String(TimeArgument.iso8601(ms).prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    struct RealSample {
        var file: String
        var bundleId: String
        var appAppleId: Int64?
        var environment: AppStoreEnvironment
        var what: String
    }

    static let realSamples = [
        RealSample(
            file: "production-test-notification.json", bundleId: "com.nineton.taller", appAppleId: 6_450_284_872,
            environment: .production, what: "Production TEST notification"),
        RealSample(
            file: "sandbox-consumable-transaction.json", bundleId: "com.goodheartapp", appAppleId: nil, environment: .sandbox,
            what: "Sandbox consumable transaction"),
    ]
}

extension Demo {
    /// What `--keep` left, and the commands to try on it.
    static func printNextSteps(_ folder: URL, customers: [TourCustomer]) {
        let renewing = customers.first?.appTransactionId ?? "APP_TRANSACTION_ID"
        let moment = customers.first?.moments.dropFirst().first
        let options = "--db demo.sqlite --config config.json"
        print("\nKept in \(folder.path): demo.sqlite, " + keptSamples.joined(separator: ", "))
        print("Try next:")
        print("  cd \(folder.path)")
        print("  entitlements query \(options) --app-transaction-id \(renewing) --pretty")
        if let moment {
            print("  entitlements query \(options) --app-transaction-id \(renewing) --at \(moment.at) --pretty    (\(moment.label))")
        }
        print("  entitlements history \(options) --app-transaction-id \(renewing)")
        print("  entitlements lifecycle \(options) --limit 10")
        print("  entitlements changes \(options) --limit 10")
        print("  entitlements audit \(options)")
        print("  entitlements replay \(options) --diff    (after editing the rules in config.json)")
        print("  entitlements ingest \(options) histories.ndjson    (again: every line a duplicate)")
        print("tour.json lists each customer's appTransactionId and the moments worth a look.")
    }
}
