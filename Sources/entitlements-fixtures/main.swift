import EntitlementCore
import Foundation
import TestPKI

/// entitlements-fixtures: (re)writes `Fixtures/demo` from the test PKI in `Fixtures/pki`
/// (created on first run). Run from the package root: `swift run entitlements-fixtures`.
let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
let pkiFolder = root.appendingPathComponent("Fixtures/pki")
let demoFolder = root.appendingPathComponent("Fixtures/demo")

let pki: TestPKI
if FileManager.default.fileExists(atPath: pkiFolder.appendingPathComponent(TestPKI.fileNames.root).path) {
    pki = try TestPKI.load(from: pkiFolder)
} else {
    pki = TestPKI()
    try pki.save(to: pkiFolder)
}
try FileManager.default.createDirectory(at: demoFolder, withIntermediateDirectories: true)

var histories = DemoHistories(pki: pki)
histories.build()
try Data((histories.lines.joined(separator: "\n") + "\n").utf8).write(to: demoFolder.appendingPathComponent("histories.ndjson"))
try Data(pki.rootPEM.utf8).write(to: demoFolder.appendingPathComponent("test-root.pem"))

let config: JSONValue = [
    "bundleId": .string(TestPayloads.bundleId), "appAppleId": .int(TestPayloads.appAppleId),
    "environment": ["Production", "Sandbox"], "rootCertificates": ["test-root.pem"],
    "rules": [
        "version": "2026-11-01", "gracePeriodGrantsAccess": true, "billingRetryGrantsAccess": false,
        "products": [
            "com.example.pro.monthly": ["entitlements": ["pro"]],
            "com.example.pro.yearly": ["entitlements": ["pro"]],
            "com.example.lifetime": ["entitlements": ["pro"]],
            "com.example.pass.week": ["entitlements": ["pro"], "durationDays": 7],
            "com.example.coins.100": ["currency": "coins", "units": 100],
        ],
    ],
]
try Data((JSONWriter.string(config) + "\n").utf8).write(to: demoFolder.appendingPathComponent("config.json"))

let tour: JSONValue = .array(
    histories.customers.map { customer in
        [
            "appTransactionId": .string(customer.appTransactionId), "title": .string(customer.title),
            "moments": .array(customer.moments.map { ["label": .string($0.label), "at": .int($0.at)] }),
        ]
    })
try Data((JSONWriter.string(tour) + "\n").utf8).write(to: demoFolder.appendingPathComponent("tour.json"))
print("wrote \(histories.lines.count) inputs for \(histories.customers.count) customers to \(demoFolder.path)")
