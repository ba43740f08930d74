import EntitlementCore
import Entitlements
import Foundation
import TestPKI

/// Shared helpers of the end-to-end tests: a signing PKI, an engine on a fresh
/// database, and the command line binary.
package enum E2E {
    /// The suite's PKI (``Scenario/pki``).
    package static var pki: TestPKI { Scenario.pki }

    /// The demo configuration's rules, as version `e2e-1`.
    package static let rules = Scenario.rules(version: "e2e-1")

    package static func folder() -> URL { Scenario.temporaryFolder("e2e") }

    package static func configuration(rules: Rules = rules) -> EngineConfiguration {
        EngineConfiguration(
            bundleId: TestPayloads.bundleId, appAppleId: TestPayloads.appAppleId, environment: .sandbox,
            rootCertificatesDER: [pki.rootDER], rules: rules)
    }

    package static func engine(rules: Rules = rules, path: String? = nil) throws -> Engine {
        try Engine(configuration: configuration(rules: rules), databasePath: path ?? folder().appendingPathComponent("e2e.sqlite").path)
    }

    /// A configuration file for the command line, trusting the suite's test root.
    package static func writeConfig(in folder: URL, rules: JSONValue? = nil, environment: String = "Sandbox") throws -> String {
        try Data(pki.rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        let config = Scenario.configJSON(environment: environment, rules: rules ?? E2E.rules.canonicalJSON)
        let path = folder.appendingPathComponent("config.json").path
        try Data(JSONWriter.string(config).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    package static func notification(
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

    /// The `entitlements` binary (``EntitlementsBinary``).
    package static var binary: URL { EntitlementsBinary.url }

    package struct Run {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        package var lines: [JSONValue] { stdout.split(separator: "\n").compactMap { try? JSONParser().parse(String($0)) } }
    }

    /// Runs the command line to completion.
    package static func run(_ arguments: [String], stdin: String? = nil, in directory: URL? = nil) throws -> Run {
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
