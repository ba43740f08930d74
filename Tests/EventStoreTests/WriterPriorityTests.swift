import EventStore
import Foundation
import Testing

/// A replay writes its new generation in background transactions, one after
/// another; an ingest (a foreground write) that asks for the lock meanwhile must
/// go before the next of them, not sleep through the gaps (issue 17).
@Suite struct WriterPriorityTests {
    /// Runs `body` on a thread of its own (writes block; never on the cooperative pool).
    static func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        return done
    }

    @Test func aWaitingForegroundWriteGoesBeforeTheNextBackgroundTransaction() throws {
        let path = StoreFixtures.temporaryDatabase()
        _ = try EventStore(path: path, hash: StoreFixtures.hash)
        let setup = try Connection(path: path)
        try setup.execute("CREATE TABLE writes (id INTEGER PRIMARY KEY, who TEXT NOT NULL)")

        // A foreground writer holds the lock until told to let go.
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let holder = Self.onThread {
            let connection = try! Connection(path: path)
            _ = try! connection.write { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes (who) VALUES ('holder')")
                holding.signal()
                release.wait()
                return ((), .commit)
            }
        }
        holding.wait()
        // A foreground ingest asks for the lock (it announces itself, then waits)...
        let foreground = Self.onThread {
            let connection = try! Connection(path: path)
            _ = try! connection.write { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes (who) VALUES ('foreground')")
                return ((), .commit)
            }
        }
        while WriterPriority.foregroundWriters(of: path) < 2 { usleep(200) }
        // ...and a background batch arrives: it defers.
        let background = Self.onThread {
            let connection = try! Connection(path: path)
            _ = try! connection.write(priority: .background) { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes (who) VALUES ('background')")
                return ((), .commit)
            }
        }
        while WriterPriority.deferringWriters(of: path) < 1 { usleep(200) }
        // The lock is let go: the foreground write takes it first.
        release.signal()
        for done in [holder, background, foreground] { done.wait() }

        let order = try setup.prepare("SELECT who FROM writes ORDER BY id")
        var who: [String] = []
        while try order.step() { who.append(order.string(0) ?? "") }
        #expect(who == ["holder", "foreground", "background"])
        #expect(WriterPriority.foregroundWriters(of: path) == 0)
    }

    @Test func aWriterWaitsOutALockHeldBrieflyByAnotherProcessStyleConnection() throws {
        // No priority between connections that do not announce themselves (another
        // process): the busy handler polls, and the write goes through once the lock is free.
        let path = StoreFixtures.temporaryDatabase()
        _ = try EventStore(path: path, hash: StoreFixtures.hash)
        let holder = try Connection(path: path)
        try holder.execute("CREATE TABLE writes (id INTEGER PRIMARY KEY)")
        try holder.execute("BEGIN IMMEDIATE")
        let started = DispatchSemaphore(value: 0)
        let writer = Self.onThread {
            let connection = try! Connection(path: path)
            started.signal()
            _ = try! connection.write { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes DEFAULT VALUES")
                return ((), .commit)
            }
        }
        started.wait()
        try holder.execute("INSERT INTO writes DEFAULT VALUES")
        try holder.execute("COMMIT")
        writer.wait()
        #expect(try holder.scalarInt("SELECT count(*) FROM writes") == 2)
    }
}
