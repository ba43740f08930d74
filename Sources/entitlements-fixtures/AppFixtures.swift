import EntitlementCore
import Foundation
import TestPKI

/// `entitlements-fixtures --bundle-id B --products P,... --out DIR`: a test PKI, a
/// configuration trusting it and signed histories for an app's own bundle id and
/// products, written into `DIR` and nowhere else.
enum AppFixtures {
    static let environments = ["Sandbox", "Production", "Xcode"]

    static func run(_ values: [String: String], out: URL) {
        guard let bundleId = values["--bundle-id"] else { usageError("--bundle-id B is required with --products") }
        guard bundleId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }), bundleId.contains(".") else {
            usageError("--bundle-id \"\(bundleId)\" is not a bundle id (such as com.example.app)")
        }
        guard let list = values["--products"] else { usageError("--products P,... is required with --bundle-id") }
        var products: [AppProduct] = []
        for item in list.split(separator: ",", omittingEmptySubsequences: false) {
            switch AppProduct.parse(item.trimmingCharacters(in: .whitespaces)) {
            case .success(let product):
                guard !products.contains(where: { $0.id == product.id }) else { usageError("--products names \(product.id) twice") }
                products.append(product)
            case .failure(let refusal): usageError("--products: " + refusal.reason)
            }
        }
        let environment = values["--environment"] ?? "Sandbox"
        guard environments.contains(environment) else {
            usageError("--environment \"\(environment)\" is not one of \(environments.joined(separator: ", "))")
        }
        let appAppleId: Int64
        if let text = values["--app-apple-id"] {
            guard let id = Int64(text), id > 0 else { usageError("--app-apple-id expects a positive integer") }
            appAppleId = id
        } else {
            appAppleId = TestPayloads.appAppleId
        }
        let entitlement = values["--entitlement"] ?? "pro"
        let start: Int64
        if let text = values["--start"] {
            guard let ms = Int64(text), ms >= 100_000_000_000 else { usageError("--start expects milliseconds since 1970") }
            start = ms
        } else {
            let today = Int64(Date().timeIntervalSince1970 * 1000) / AppHistories.day * AppHistories.day
            start = today - 40 * AppHistories.day
        }

        do {
            let pkiFolder = out.appendingPathComponent("pki")
            let pki: TestPKI
            if FileManager.default.fileExists(atPath: pkiFolder.appendingPathComponent(TestPKI.fileNames.root).path) {
                pki = try TestPKI.load(from: pkiFolder)
            } else {
                pki = TestPKI()
                try pki.save(to: pkiFolder)
            }
            var histories = AppHistories(
                pki: pki, bundleId: bundleId, appAppleId: appAppleId, environment: environment, products: products, start: start)
            histories.build()
            try write((histories.lines.joined(separator: "\n") + "\n"), to: out, "histories.ndjson")
            try write(pki.rootPEM, to: out, "test-root.pem")
            try write(JSONWriter.string(histories.configuration(entitlement: entitlement)) + "\n", to: out, "config.json")
            let customers: JSONValue = .array(
                histories.customers.map { customer in
                    [
                        "appTransactionId": .string(customer.appTransactionId),
                        "originalTransactionId": .string(customer.originalTransactionId), "title": .string(customer.title),
                        "moments": .array(customer.moments.map { ["label": .string($0.label), "at": .int($0.at)] }),
                    ]
                })
            try write(JSONWriter.string(customers) + "\n", to: out, "customers.json")
            printNextSteps(out, histories: histories)
        } catch {
            FileHandle.standardError.write(Data("entitlements-fixtures: cannot write \(out.path): \(error)\n".utf8))
            exit(3)
        }
    }

    static func write(_ text: String, to folder: URL, _ name: String) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: folder.appendingPathComponent(name), options: .atomic)
    }

    static func printNextSteps(_ out: URL, histories: AppHistories) {
        print("wrote \(histories.lines.count) inputs for \(histories.customers.count) customers of \(histories.bundleId) (\(histories.environment)) to \(out.path)")
        print("  config.json, test-root.pem, histories.ndjson, customers.json, pki/")
        print("Try next:")
        print("  cd \(out.path)")
        let options = "--db fixtures.sqlite --config config.json"
        print("  entitlements ingest \(options) histories.ndjson")
        for customer in histories.customers.prefix(3) {
            print("  entitlements query \(options) --app-transaction-id \(customer.appTransactionId) --pretty    # \(customer.title)")
        }
        if let first = histories.customers.first {
            print("  entitlements history \(options) --app-transaction-id \(first.appTransactionId)")
        }
        print("  entitlements lifecycle \(options)")
        print("  entitlements replay \(options)    # after editing the rules in config.json")
        print("customers.json lists every customer and the moments worth asking about (--at MS).")
    }
}
