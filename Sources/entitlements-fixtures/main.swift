import EntitlementCore
import Foundation
import TestPKI

/// entitlements-fixtures: (re)writes `DIR/demo` from the test PKI in `DIR/pki` (created
/// on first run), where `DIR` is given by `--out` and nothing is written anywhere else.
/// The repository's own: `swift run entitlements-fixtures --out Fixtures` from the package root.
/// With `--bundle-id` and `--products`, it writes signed histories for that app instead
/// (``AppFixtures``).
let usage = """
    usage: entitlements-fixtures --out DIR
           entitlements-fixtures --bundle-id B --products P[:TYPE],... --out DIR [options]

    Without --bundle-id: writes the demo's signed histories to DIR/demo (histories.ndjson,
    config.json, tour.json, test-root.pem), signed by the test PKI in DIR/pki: loaded when
    it is there, else made and saved there first. Writes nothing outside DIR.
    The repository's own fixtures: swift run entitlements-fixtures --out Fixtures

    With --bundle-id and --products: test data for your own app. Writes DIR/config.json
    (your bundle id, the test root trusted, rules mapping every product), DIR/test-root.pem,
    DIR/histories.ndjson (signed histories for each product: new purchase, renewal,
    refund, billing retry, and an upgrade between the first two subscriptions),
    DIR/customers.json (each customer and the moments worth asking about) and DIR/pki
    (the test PKI, reused when there). Then: entitlements ingest --config DIR/config.json
    DIR/histories.ndjson, and every other command, work on it.

    options:
      --out DIR            the folder to write (required; created when missing)
      --bundle-id B        your app's bundle id
      --products LIST      comma-separated product ids; each ID is an auto-renewable
                           subscription, or ID:TYPE with TYPE subscription, consumable,
                           non-consumable or non-renewing
      --environment ENV    Sandbox (default), Production, or Xcode (StoreKit testing in
                           Xcode: the configuration names no root, signatures are not checked)
      --app-apple-id N     the app's Apple ID in the data and configuration (default 1234567890)
      --entitlement E      the entitlement every non-consumable product grants (default pro)
      --start MS           day 0 of every history, ms since 1970 (default: 40 days before
                           today, so that the renewed subscriptions are active now)
      -h, --help           print this text and exit

    """

/// Refuses the command line: the reason and the usage on standard error, exit status 2.
func usageError(_ reason: String) -> Never {
    FileHandle.standardError.write(Data(("entitlements-fixtures: " + reason + "\n\n" + usage).utf8))
    exit(2)
}

var values: [String: String] = [:]
let valued: Set<String> = ["--out", "--bundle-id", "--products", "--environment", "--app-apple-id", "--entitlement", "--start"]
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "-h" || argument == "--help" {
        print(usage, terminator: "")
        exit(0)
    }
    var name = argument
    var value: String? = nil
    if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
        name = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
    }
    guard valued.contains(name) else { usageError("unknown argument \"\(argument)\"") }
    if value == nil { value = arguments.popFirst() }
    guard let value, !value.isEmpty, !value.hasPrefix("--") else {
        usageError(name == "--out" ? "--out needs a folder" : "\(name) needs a value")
    }
    values[name] = value
}
guard let outPath = values["--out"] else { usageError("--out DIR is required (the repository's own: --out Fixtures)") }

if values["--bundle-id"] != nil || values["--products"] != nil {
    AppFixtures.run(values, out: URL(fileURLWithPath: outPath))
    exit(0)
}
if let stray = values.keys.sorted().first(where: { $0 != "--out" }) {
    usageError("\(stray) is for your own app's fixtures: give --bundle-id and --products too")
}

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
