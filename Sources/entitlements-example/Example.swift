// The embedding example of the issue and the README ("As a library"), built with the
// package and run by the tests (LibraryTests): it compiles with `import Entitlements`
// alone and prints the same JSON as `entitlements query`.
//
//   entitlements-example CONFIG DB INPUT_FILE APP_TRANSACTION_ID
//
// The snippet runs inside an async function, as in a server's request handler: there
// Swift picks the engine's async twins. (In top-level code Swift's overload rules pick
// the synchronous ones, which block the calling thread.)
import Entitlements
import Foundation

@main
struct Example {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 5 else {
            FileHandle.standardError.write(Data("usage: entitlements-example CONFIG DB INPUT_FILE APP_TRANSACTION_ID\n".utf8))
            exit(2)
        }
        let (cfg, db, id) = (arguments[1], arguments[2], arguments[4])
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: arguments[3])))

        let engine = try Engine(configuration: try EngineConfiguration.load(path: cfg), databasePath: db)
        let results: [IngestResult] = try await engine.ingest([InputBytes(bytes: bytes)])
        let answer: QueryAnswer = try await engine.query(.appTransactionId(id))
        print(String(decoding: try JSONEncoder().encode(answer), as: UTF8.self))

        // Each ingest result encodes as the line `entitlements ingest` prints.
        for result in results {
            FileHandle.standardError.write(try JSONEncoder().encode(result) + Data("\n".utf8))
        }
    }
}
