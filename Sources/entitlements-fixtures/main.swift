import EntitlementCore
import Foundation
import TestPKI

/// entitlements-fixtures: (re)writes `DIR/demo` from the test PKI in `DIR/pki` (created
/// on first run), where `DIR` is given by `--out` and nothing is written anywhere else.
/// The repository's own: `swift run entitlements-fixtures --out Fixtures` from the package root.
let usage = """
    usage: entitlements-fixtures --out DIR

    Writes the demo's signed histories to DIR/demo (histories.ndjson, config.json,
    tour.json, test-root.pem), signed by the test PKI in DIR/pki: loaded when it is
    there, else made and saved there first. Writes nothing outside DIR.
    The repository's own fixtures: swift run entitlements-fixtures --out Fixtures

    options:
      --out DIR   the folder to write (required; created when missing)
      -h, --help  print this text and exit

    """

/// Refuses the command line: the reason and the usage on standard error, exit status 2.
func usageError(_ reason: String) -> Never {
    FileHandle.standardError.write(Data(("entitlements-fixtures: " + reason + "\n\n" + usage).utf8))
    exit(2)
}

var outPath: String? = nil
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    case "--out":
        guard let value = arguments.popFirst(), !value.isEmpty else { usageError("--out needs a folder") }
        outPath = value
    case _ where argument.hasPrefix("--out="):
        let value = String(argument.dropFirst("--out=".count))
        guard !value.isEmpty else { usageError("--out needs a folder") }
        outPath = value
    default:
        usageError("unknown argument \"\(argument)\"")
    }
}
guard let outPath else { usageError("--out DIR is required (the repository's own: --out Fixtures)") }

let root = URL(fileURLWithPath: outPath)
let pkiFolder = root.appendingPathComponent("pki")
let demoFolder = root.appendingPathComponent("demo")

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
