import EntitlementCore
import Entitlements
import Foundation
import TestPKI

/// Shared helpers of the end-to-end tests: a signing PKI, an engine on a fresh
/// database, and the command line binary.
enum E2E {
    /// One PKI for the whole suite (key generation is the slow part).
    static let pki = TestPKI()

    static let rules = Rules(
        version: "e2e-1", gracePeriodGrantsAccess: true, billingRetryGrantsAccess: false,
        products: [
            "com.example.pro.monthly": ProductRule(entitlements: ["pro"]),
            "com.example.pro.yearly": ProductRule(entitlements: ["pro"]),
            "com.example.lifetime": ProductRule(entitlements: ["pro"]),
            "com.example.pass.week": ProductRule(entitlements: ["pro"], durationDays: 7),
            "com.example.coins.100": ProductRule(currency: "coins", units: 100),
        ])

    static func folder() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func configuration(rules: Rules = rules) -> EngineConfiguration {
        EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
            rootCertificatesDER: [pki.rootDER], rules: rules)
    }

    static func engine(rules: Rules = rules, path: String? = nil) throws -> Engine {
        try Engine(configuration: configuration(rules: rules), databasePath: path ?? folder().appendingPathComponent("e2e.sqlite").path)
    }

    /// A configuration file for the command line, trusting the suite's test root.
    static func writeConfig(in folder: URL, rules: JSONValue? = nil, environment: String = "Sandbox") throws -> String {
        try Data(pki.rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        let config: JSONValue = [
            "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
            "environment": .string(environment), "rootCertificates": ["root.pem"],
            "rules": rules ?? E2E.rules.canonicalJSON,
        ]
        let path = folder.appendingPathComponent("config.json").path
        try Data(JSONWriter.string(config).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func notification(
        _ type: String, _ subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signed: Int64,
        transaction: JSONValue? = nil, renewal: JSONValue? = nil, environment: String = TestPayloads.environment
    ) -> String {
        TestPayloads.body(
            signedPayload: pki.sign(
                TestPayloads.notification(
                    type: type, subtype: subtype, uuid: uuid, signedDate: signed, environment: environment,
                    signedTransactionInfo: transaction.map(pki.sign),
                    signedRenewalInfo: renewal.map(pki.sign))))
    }

    /// The `entitlements` binary built beside the test bundle.
    static var binary: URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("entitlements")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        // Not beside the test bundle: the package's default debug build.
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/entitlements")
    }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [JSONValue] { stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) } }
    }

    /// Runs the command line to completion.
    static func run(_ arguments: [String], stdin: String? = nil, in directory: URL? = nil) throws -> Run {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// The seeded generator shared by the tests (TestPKI), so randomized tests are reproducible.
typealias E2ERandom = SeededRandom
