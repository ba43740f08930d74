import EntitlementCore
import Foundation
import Testing
import TestSupport

/// `entitlements-fixtures`, run as the built program: it writes only into the folder
/// `--out` names, `--help` writes nothing, and an unknown argument is a usage error.
@Suite("Fixture maker")
struct FixtureMakerTests {
    /// The built `entitlements-fixtures`, beside the `entitlements` the tests run.
    static let executable: URL? = EntitlementsBinary.sibling("entitlements-fixtures")

    struct Missing: Error, CustomStringConvertible {
        var what = "entitlements-fixtures was not found beside the test bundle; build it (swift build --build-tests)"
        var description: String { what }
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// A fresh empty folder under the temporary directory.
    static func emptyFolder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("fixture-maker-\(name)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs the program with `arguments` in `folder` (its working directory).
    static func run(_ arguments: [String], in folder: URL) throws -> Outcome {
        guard let executable else { throw Missing() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let outURL = folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + ".stdout")
        let errURL = folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + ".stderr")
        // Beside the working directory, not in it: the tests check what the program writes there.
        for url in [outURL, errURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
            throw Missing(what: "cannot create \(url.path)")
        }
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Outcome(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    static func contents(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test("--help prints the usage and writes nothing in its working directory")
    func helpWritesNothing() throws {
        let folder = try Self.emptyFolder("help")
        defer { try? FileManager.default.removeItem(at: folder) }
        for flag in ["--help", "-h"] {
            let outcome = try Self.run([flag], in: folder)
            #expect(outcome.status == 0, "\(flag): \(outcome.stderr)")
            #expect(outcome.stdout.hasPrefix("usage: entitlements-fixtures --out DIR"), "\(flag)")
            #expect(outcome.stdout.contains("--out DIR"))
            let written = try Self.contents(folder)
            #expect(written.isEmpty, "\(flag) wrote \(written)")
        }
    }

    @Test("an unknown argument, or no --out, is a usage error (exit 2) that writes nothing")
    func unknownArgumentsAreRefused() throws {
        let folder = try Self.emptyFolder("refused")
        defer { try? FileManager.default.removeItem(at: folder) }
        for arguments in [["--bogus"], [], ["--out"], ["Fixtures"], ["--out", "x", "extra"]] {
            let outcome = try Self.run(arguments, in: folder)
            #expect(outcome.status == 2, "\(arguments)")
            #expect(outcome.stderr.contains("usage: entitlements-fixtures --out DIR"), "\(arguments)")
            #expect(outcome.stdout.isEmpty, "\(arguments)")
            let written = try Self.contents(folder)
            #expect(written.isEmpty, "\(arguments) wrote \(written)")
        }
    }

    @Test("--out DIR writes the PKI and the demo histories there, and nothing in the working directory")
    func outWritesThereOnly() throws {
        let workingDirectory = try Self.emptyFolder("cwd")
        let out = try Self.emptyFolder("out")
        defer {
            try? FileManager.default.removeItem(at: workingDirectory)
            try? FileManager.default.removeItem(at: out)
        }
        let target = out.appendingPathComponent("made")
        let outcome = try Self.run(["--out", target.path], in: workingDirectory)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("wrote "))
        let stray = try Self.contents(workingDirectory)
        #expect(stray.isEmpty, "wrote \(stray) in the working directory")
        #expect(try Self.contents(target) == ["demo", "pki"])
        #expect(try Self.contents(target.appendingPathComponent("demo")) == ["config.json", "histories.ndjson", "test-root.pem", "tour.json"])
        #expect(try Self.contents(target.appendingPathComponent("pki")).contains("root.pem"))
        let histories = try String(contentsOf: target.appendingPathComponent("demo/histories.ndjson"), encoding: .utf8)
        #expect(histories.split(separator: "\n").count > 10)
        // A second run reuses the PKI it made: the root stays the same.
        let root = try Data(contentsOf: target.appendingPathComponent("pki/root.pem"))
        #expect(try Self.run(["--out=" + target.path], in: workingDirectory).status == 0)
        #expect(try Data(contentsOf: target.appendingPathComponent("pki/root.pem")) == root)
        #expect(try Data(contentsOf: target.appendingPathComponent("demo/test-root.pem")) == root)
    }

    @Test("--bundle-id and --products write a PKI, a configuration trusting it and signed histories that every command takes")
    func appFixturesWorkWithEveryCommand() throws {
        let workingDirectory = try Self.emptyFolder("app-cwd")
        let out = try Self.emptyFolder("app-out").appendingPathComponent("acme")
        defer {
            try? FileManager.default.removeItem(at: workingDirectory)
            try? FileManager.default.removeItem(at: out.deletingLastPathComponent())
        }
        let products = "com.acme.pro.monthly,com.acme.pro.yearly,com.acme.gems:consumable,com.acme.unlock:non-consumable,com.acme.pass:non-renewing"
        let made = try Self.run(["--bundle-id", "com.acme.app", "--products", products, "--out", out.path], in: workingDirectory)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("Try next:") && made.stdout.contains("entitlements ingest"), "\(made.stdout)")
        #expect(try Self.contents(workingDirectory).isEmpty)
        #expect(try Self.contents(out) == ["config.json", "customers.json", "histories.ndjson", "pki", "test-root.pem"])

        // Ingested as they are: every item appended, nothing rejected, no product unknown to the rules.
        let database = out.appendingPathComponent("acme.sqlite").path
        let config = out.appendingPathComponent("config.json").path
        let ingest = try E2E.run(["ingest", "--db", database, "--config", config, out.appendingPathComponent("histories.ndjson").path])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(!ingest.lines.isEmpty && ingest.lines.allSatisfy { $0["result"] == "appended" }, "\(ingest.stdout)")
        #expect(ingest.stderr.isEmpty, "\(ingest.stderr)")

        // Each customer is what customers.json says, at the moment it names.
        guard case .array(let customers) = try JSONParser().parse(try String(contentsOf: out.appendingPathComponent("customers.json"), encoding: .utf8))
        else {
            Issue.record("customers.json is not a list")
            return
        }
        var seen: [String: JSONValue] = [:]
        for customer in customers {
            guard case .string(let id)? = customer["appTransactionId"], case .string(let title)? = customer["title"],
                case .array(let moments)? = customer["moments"], case .int(let at)? = moments.last?["at"]
            else {
                Issue.record("a customer without id, title or moments: \(customer)")
                continue
            }
            let query = try E2E.run(["query", "--db", database, "--config", config, "--app-transaction-id", id, "--at", String(at)])
            #expect(query.status == 0, "\(id): \(query.stderr)")
            seen[title] = query.lines.first
        }
        func element(_ value: JSONValue?) -> JSONValue? { if case .array(let items)? = value { items.first } else { nil } }
        func find(_ words: String...) -> JSONValue? { seen.first { entry in words.allSatisfy { entry.key.contains($0) } }?.value }
        #expect(find("com.acme.pro.monthly", "renewed")?["entitlements"]?["pro"]?["active"] == true)
        #expect(find("com.acme.pro.monthly", "refunded")?["entitlements"]?["pro"]?["active"] == false)
        #expect(element(find("com.acme.pro.monthly", "billing retry")?["subscriptions"])?["status"] == "billing_retry")
        #expect(find("upgraded to com.acme.pro.yearly")?["entitlements"]?["pro"]?["productId"] == "com.acme.pro.yearly")
        #expect(seen["com.acme.gems: bought on day 1 (quantity 2)"]?["balances"]?["coins"] == 2)
        #expect(seen["com.acme.gems: bought on day 1 (quantity 2), refunded on day 3"]?["balances"]?["coins"] == 0)
        #expect(element(find("com.acme.unlock", "refunded")?["purchases"])?["revoked"] == true)
        #expect(seen["com.acme.pass: bought on day 1 (quantity 1)"]?["entitlements"]?["pro"]?["active"] == true)

        // The other commands take them too.
        let first = customers.first?["appTransactionId"].flatMap { value -> String? in if case .string(let s) = value { s } else { nil } } ?? ""
        for arguments in [["history", "--app-transaction-id", first], ["lifecycle"], ["audit"], ["replay"]] {
            let run = try E2E.run([arguments[0], "--db", database, "--config", config] + arguments.dropFirst())
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
        }

        // Production and Xcode configurations fit their data too.
        for environment in ["Production", "Xcode"] {
            let folder = out.deletingLastPathComponent().appendingPathComponent(environment)
            let outcome = try Self.run(
                ["--bundle-id", "com.acme.app", "--products", "com.acme.pro.monthly", "--environment", environment, "--out", folder.path],
                in: workingDirectory)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let run = try E2E.run([
                "ingest", "--db", folder.appendingPathComponent("f.sqlite").path, "--config", folder.appendingPathComponent("config.json").path,
                folder.appendingPathComponent("histories.ndjson").path,
            ])
            #expect(run.status == 0, "\(environment): \(run.stdout) \(run.stderr)")
        }
    }

    @Test("bad --products, --environment or --bundle-id are usage errors that write nothing")
    func badAppFixturesAreRefused() throws {
        let folder = try Self.emptyFolder("app-refused")
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("never").path
        for arguments in [
            ["--bundle-id", "com.acme.app", "--out", target],
            ["--products", "a.b", "--out", target],
            ["--bundle-id", "com.acme.app", "--products", "a.b:subscriptio", "--out", target],
            ["--bundle-id", "com.acme.app", "--products", "a.b,,c", "--out", target],
            ["--bundle-id", "com.acme.app", "--products", "a.b,a.b", "--out", target],
            ["--bundle-id", "com.acme.app", "--products", "a.b", "--environment", "Prod", "--out", target],
            ["--bundle-id", "acme", "--products", "a.b", "--out", target],
            ["--bundle-id", "com.acme.app", "--products", "a.b"],
            ["--environment", "Sandbox", "--out", target],
        ] {
            let outcome = try Self.run(arguments, in: folder)
            #expect(outcome.status == 2, "\(arguments)")
            #expect(outcome.stderr.contains("usage: entitlements-fixtures"), "\(arguments)")
            #expect(try Self.contents(folder).isEmpty, "\(arguments)")
        }
    }
}
