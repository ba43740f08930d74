import DemoFixtures
import Entitlements
import Foundation

/// What the log keeps of each real Apple-signed sample (`Fixtures/real`): each
/// ingested alone into a fresh database, under a configuration naming its app,
/// then measured (``Storage/measure(_:columns:)``): the bytes of the event's rows
/// and index entries, and apart from them the JWS header, which the log keeps
/// once for every JWS signed with that certificate.
enum RealSamplesStorage {
    struct Sample {
        var file: String
        var inputBytes: Int
        var jwsBytes: Int
        var storage: Storage.Figures
    }

    static let configurations: [String: String] = [
        "production-test-notification.json":
            #"{"bundleId":"com.nineton.taller","appAppleId":6450284872,"environment":["Production"],"rules":{"version":"1","products":{}}}"#,
        "sandbox-consumable-transaction.json":
            #"{"bundleId":"com.goodheartapp","environment":["Sandbox"],"rules":{"version":"1","products":{"gh_super_good_ticket_1":{"currency":"tickets","units":1}}}}"#,
    ]

    static func measure(folder: String) throws -> [Sample] {
        var samples: [Sample] = []
        for file in DemoFixtures.folder("real") where file.name.hasSuffix(".json") {
            guard let configurationText = configurations[file.name] else { continue }
            let configPath = folder + "/real-\(file.name).config.json"
            let path = folder + "/real-\(file.name).sqlite"
            Storage.remove(path)
            try Data(configurationText.utf8).write(to: URL(fileURLWithPath: configPath))
            let engine = try Engine(configuration: try EngineConfiguration.load(path: configPath), databasePath: path)
            let results = try engine.ingest([InputBytes(bytes: Array(file.text.utf8))])
            guard results.count == 1, results[0].outcome == IngestResult.Outcome.appended else {
                throw BenchFailure("the real sample \(file.name) was not appended: \(results.map { $0.json() })")
            }
            // The JWS itself: the document's one string value.
            let pieces: [Substring] = file.text.split(separator: Character("\""))
            let jws = pieces.max { $0.utf8.count < $1.utf8.count }.map(String.init) ?? ""
            samples.append(Sample(file: file.name, inputBytes: file.text.utf8.count, jwsBytes: jws.utf8.count, storage: try Storage.measure(path)))
            Storage.remove(path)
            try? FileManager.default.removeItem(atPath: configPath)
        }
        return samples
    }
}
