import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// `--db` naming a folder: a clear error naming the path.
@Suite struct DatabaseFolderTests {
    @Test("--db naming a folder: DATABASE_UNAVAILABLE, exit 3, naming the path and saying --db names the file")
    func databaseFolder() throws {
        let folder = E2E.folder()
        let config = try E2E.writeConfig(in: folder)
        let database = folder.appendingPathComponent("db-folder")
        try FileManager.default.createDirectory(at: database, withIntermediateDirectories: true)
        for arguments in [["ingest"], ["query", "--app-transaction-id", "1"], ["replay"]] {
            let run = try E2E.run([arguments[0], "--db", database.path, "--config", config] + arguments.dropFirst(), stdin: "", in: folder)
            #expect(run.status == 3, "\(arguments[0]): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("DATABASE_UNAVAILABLE"), "\(run.stderr)")
            #expect(run.stderr.contains("\(database.path) is a folder, not a database file: --db names the SQLite file"), "\(run.stderr)")
            #expect(!run.stderr.contains("disk I/O error") && !run.stderr.contains("unable to open database file"), "\(run.stderr)")
        }
    }
}
