import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import EventStore
import SchemaMigrations
import Synchronization
import Testing

/// A new database gets every migration in one transaction; engines creating the same
/// file at the same moment all open it, its schema whole.
@Suite struct NewDatabaseMigrationTests {
    @Test func aNewDatabaseGetsEveryMigrationAtOnce() throws {
        let path = StoreFixtures.temporaryDatabase()
        let connection = try Connection(path: path, mode: .readWrite)
        #expect(try Migrator.status(connection, migrations: SchemaMigrations.migrations) == .empty)
        let applied = try Migrator.migrate(connection, migrations: SchemaMigrations.migrations)
        #expect(applied == SchemaMigrations.migrations.map(\.identifier))
        #expect(try Migrator.status(connection, migrations: SchemaMigrations.migrations) == .current)
        let highest = SchemaMigrations.migrations.map { Migrator.number(of: $0.identifier) }.max() ?? 0
        #expect(try connection.scalarInt("PRAGMA user_version") == Int64(highest))
        // Again: nothing to do.
        #expect(try Migrator.migrate(connection, migrations: SchemaMigrations.migrations).isEmpty)
    }

    /// A side file that another connection's close removes while a writer checks the
    /// files is missing, not unwritable (the check once saw it exist, then failed to write it).
    @Test func aSideFileRemovedDuringTheCheckIsNotUnwritable() throws {
        let path = StoreFixtures.temporaryDatabase()
        _ = try EventStore(path: path, hash: StoreFixtures.hash)
        let stop = Atomic<Bool>(false)
        let stopped = DispatchSemaphore(value: 0)
        let toggler = Thread {
            while !stop.load(ordering: .relaxed) {
                for suffix in ["-wal", "-shm"] {
                    close(open(path + suffix, O_CREAT | O_WRONLY, 0o644))
                    unlink(path + suffix)
                }
            }
            stopped.signal()
        }
        toggler.start()
        defer {
            stop.store(true, ordering: .relaxed)
            stopped.wait()
        }
        var problems: [String] = []
        for _ in 0..<100_000 {
            if let problem = EventStore.unwritable(path) { problems.append(problem) }
        }
        #expect(problems.isEmpty, "\(problems.count) checks: \(problems.first ?? "")")
    }

    @Test func enginesCreatingOneDatabaseTogetherAllOpenIt() throws {
        for round in 0..<4 {
            let path = StoreFixtures.temporaryDatabase()
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do {
                    _ = try EventStore(path: path, hash: StoreFixtures.hash)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
            let connection = try Connection(path: path, mode: .readWrite)
            #expect(try Migrator.status(connection, migrations: SchemaMigrations.migrations) == .current)
            let recorded = try connection.prepare("SELECT identifier FROM schema_migrations ORDER BY identifier")
            var identifiers: [String] = []
            while try recorded.step() { identifiers.append(recorded.string(0) ?? "") }
            recorded.reset()
            #expect(identifiers == SchemaMigrations.migrations.map(\.identifier).sorted(), "round \(round)")
        }
    }
}
