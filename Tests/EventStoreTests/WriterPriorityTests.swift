import EventStore
import Foundation
import Testing

/// A replay writes its new generation in background transactions, one after
/// another; an ingest (a foreground write) that asks for the lock meanwhile must
/// go before the next of them, not sleep through the gaps.
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

    /// How long any one wait may take before the test fails instead of hanging (a loaded
    /// two-core machine takes milliseconds for what is waited for here).
    static let deadline: Double = 60

    /// Waits until `condition` holds, polling; `false` once ``deadline`` seconds have passed.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(deadline)
        while !condition() {
            if Date() > end { return false }
            usleep(200)
        }
        return true
    }

    /// Waits for `semaphore`; `false` once ``deadline`` seconds have passed.
    static func signaled(_ semaphore: DispatchSemaphore) -> Bool {
        semaphore.wait(timeout: .now() + deadline) == .success
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
                _ = release.wait(timeout: .now() + Self.deadline)
                return ((), .commit)
            }
        }
        // Whatever happens below, the holder lets go, so no thread is left waiting.
        defer { release.signal() }
        try #require(Self.signaled(holding), "the holder never took the lock")
        // A foreground ingest asks for the lock (it announces itself, then waits)...
        let foreground = Self.onThread {
            let connection = try! Connection(path: path)
            _ = try! connection.write { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes (who) VALUES ('foreground')")
                return ((), .commit)
            }
        }
        try #require(Self.eventually { WriterPriority.foregroundWriters(of: path) >= 2 }, "the foreground writer never announced itself")
        // ...and a background batch arrives: it defers.
        let background = Self.onThread {
            let connection = try! Connection(path: path)
            _ = try! connection.write(priority: .background) { () throws -> ((), Connection.Completion) in
                try connection.execute("INSERT INTO writes (who) VALUES ('background')")
                return ((), .commit)
            }
        }
        try #require(Self.eventually { WriterPriority.deferringWriters(of: path) >= 1 }, "the background writer never deferred")
        // The lock is let go: the foreground write takes it first.
        release.signal()
        for (name, done) in [("holder", holder), ("background", background), ("foreground", foreground)] {
            try #require(Self.signaled(done), "the \(name) write did not finish")
        }

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
        try #require(Self.signaled(started), "the writer never started")
        try holder.execute("INSERT INTO writes DEFAULT VALUES")
        try holder.execute("COMMIT")
        try #require(Self.signaled(writer), "the writer did not finish once the lock was free")
        #expect(try holder.scalarInt("SELECT count(*) FROM writes") == 2)
    }
}
