import DemoFixtures
import EntitlementCore
import Entitlements
import Foundation

/// `entitlements demo`: the bundled sample histories, ingested into a fresh
/// database in a temporary folder, and a short account of each customer.
enum Demo {
    static func run() -> ExitCode {
        guard let folder = DemoFixtures.demoFolder, let realFolder = DemoFixtures.realFolder else {
            Output.error("entitlements demo: the bundled samples are missing from this build")
            return .storage
        }
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("entitlements-demo-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        } catch {
            Output.error("entitlements demo: cannot create a temporary folder: \(error)")
            return .storage
        }
        defer { try? FileManager.default.removeItem(at: workspace) }

        let configuration: EngineConfiguration
        let engine: Engine
        do {
            configuration = try EngineConfiguration.load(path: folder.appendingPathComponent("config.json").path)
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
        print("Signed samples: \(folder.path)")
        print("(made with a test PKI shaped like Apple's: P-384 root and intermediate, P-256 leaf;")
        print(" the demo's config.json trusts that test root instead of Apple Root CA - G3)")
        print("Database:       \(workspace.path)/demo.sqlite (removed afterwards)\n")

        // 1. Ingest.
        var lines: [InputBytes] = []
        if let text = try? String(contentsOf: folder.appendingPathComponent("histories.ndjson"), encoding: .utf8) {
            lines = text.split(separator: "\n").map { InputBytes(String($0)) }
        }
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
        for customer in tour(folder) {
            print("Customer \(customer.appTransactionId)")
            print("  \(customer.title)")
            for moment in customer.moments {
                guard case .customer(let view)? = try? engine.query(.appTransactionId(customer.appTransactionId), at: moment.at) else {
                    print("  \(date(moment.at))  (not found)")
                    continue
                }
                print("  \(date(moment.at))  \(moment.label)")
                for line in describe(view) { print("      " + line) }
            }
            print("")
        }

        // 3. Real Apple-signed data against the embedded Apple root.
        print("Real Apple-signed samples, verified against the embedded Apple Root CA - G3:")
        for sample in realSamples {
            let url = realFolder.appendingPathComponent(sample.file)
            guard let data = try? Data(contentsOf: url),
                let verifier = try? DocumentVerifier(
                    configuration: EngineConfiguration(
                        bundleId: sample.bundleId, appAppleId: sample.appAppleId, environment: sample.environment,
                        rules: configuration.rules))
            else {
                print("  \(sample.file): cannot read")
                continue
            }
            for line in verifier.verify(InputBytes(bytes: Array(data))) {
                if case .string(let result)? = line["result"], result == "verified" {
                    print("  \(sample.file): verified (\(sample.what))")
                } else {
                    print("  \(sample.file): \(JSONWriter.string(line["error"] ?? .null))")
                }
            }
        }
        print("\nTry it yourself: entitlements --help")
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

    static func tour(_ folder: URL) -> [TourCustomer] {
        guard let data = try? Data(contentsOf: folder.appendingPathComponent("tour.json")),
            case .array(let entries)? = try? JSONParser().parse(Array(data))
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

    static func date(_ ms: Int64) -> String {
        formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    nonisolated(unsafe) static let formatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter
    }()

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
