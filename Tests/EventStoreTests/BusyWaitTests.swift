import EventStore
import Foundation
import Synchronization
import Testing

/// How a store's connection waits for a lock another connection holds: up to its busy
/// timeout, after a checkpoint too; not at all once waits are abandoned (a server
/// stopping), and again once resumed.
@Suite struct BusyWaitTests {
    /// A write lock held by a connection of its own, as another process would hold it.
    final class Holder {
        let connection: Connection
        init(_ path: String) throws {
            connection = try Connection(path: path, mode: .readWrite)
            try connection.execute("BEGIN IMMEDIATE")
        }
        func release() throws { try connection.execute("COMMIT") }
    }

    /// Takes the store's write lock on a thread of its own; `finished` holds the outcome
    /// (`nil` while it waits, then whether it got the lock).
    final class Attempt: @unchecked Sendable {
        let finished = Mutex<Bool?>(nil)
        /// The store's connection, used by the attempt's thread alone while it runs (each
        /// test waits for an attempt's outcome before the next).
        struct Handed: @unchecked Sendable { let connection: Connection }

        init(_ store: EventStore) {
            let handed = Handed(connection: store.rawConnection)
            let thread = Thread { [self] in
                let got: Bool
                do {
                    try handed.connection.execute("BEGIN IMMEDIATE")
                    try handed.connection.execute("COMMIT")
                    got = true
                } catch {
                    got = false
                }
                finished.withLock { $0 = got }
            }
            thread.start()
        }

        /// The outcome, once there is one within `seconds`.
        func outcome(within seconds: Double) -> Bool? {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if let outcome = finished.withLock({ $0 }) { return outcome }
                usleep(2_000)
            }
            return finished.withLock { $0 }
        }
    }

    @Test("after a checkpoint, a write still waits for a lock another connection holds, and gets it once released")
    func checkpointKeepsTheWait() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash, busyTimeoutMilliseconds: 60_000)
        try store.checkpoint()
        let holder = try Holder(path)
        let attempt = Attempt(store)
        // With no wait it would have failed within moments; with the wait it cannot end while the lock is held.
        #expect(attempt.outcome(within: 0.5) == nil, "the write did not wait for the lock")
        try holder.release()
        #expect(attempt.outcome(within: 60) == true)
    }

    @Test("abandoned waits end at once, the one under way included; resumed, they wait again")
    func abandonedAndResumed() throws {
        let path = StoreFixtures.temporaryDatabase()
        let store = try EventStore(path: path, hash: StoreFixtures.hash, busyTimeoutMilliseconds: 60_000)
        let holder = try Holder(path)
        let waiting = Attempt(store)
        // From another thread, while the write waits (or before it begins: it then gives up at once).
        store.busyWait.abandon()
        #expect(store.busyWait.isAbandoned)
        #expect(waiting.outcome(within: 30) == false, "an abandoned wait went on")
        #expect(Attempt(store).outcome(within: 30) == false, "a later write waited")

        store.busyWait.resume()
        let again = Attempt(store)
        #expect(again.outcome(within: 0.5) == nil, "a resumed write did not wait")
        try holder.release()
        #expect(again.outcome(within: 60) == true)
    }
}
