import Synchronization

/// How a connection waits for a lock another connection holds (`SQLITE_BUSY`): polled
/// until the busy timeout has passed, unless waits are abandoned (a server stopping:
/// ``abandon()``, from any thread, ends the wait under way at its next poll and every
/// later one at once, until ``resume()``) or the connection's own thread asks for no
/// wait (``withoutWaiting(_:)``).
public final class BusyWait: Sendable {
    /// The longest a wait lasts, in microseconds.
    let timeoutMicroseconds: Int64
    private let abandoned = Atomic<Bool>(false)
    /// How many ``withoutWaiting(_:)`` calls are under way (the connection's own thread).
    private let unwaited = Atomic<Int>(0)

    init(timeoutMilliseconds: Int32) {
        timeoutMicroseconds = Int64(max(timeoutMilliseconds, 0)) * 1_000
    }

    /// Ends the wait under way at its next poll (within a millisecond), and makes every
    /// later one give up at once, until ``resume()``. Safe from any thread.
    public func abandon() { abandoned.store(true, ordering: .releasing) }

    /// Waits for locks again, up to the busy timeout. Safe from any thread.
    public func resume() { abandoned.store(false, ordering: .releasing) }

    /// Whether waits are abandoned now.
    public var isAbandoned: Bool { abandoned.load(ordering: .acquiring) }

    /// Runs `body` with the connection giving up at once on a lock another holds.
    func withoutWaiting<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        unwaited.wrappingAdd(1, ordering: .relaxed)
        defer { unwaited.wrappingSubtract(1, ordering: .relaxed) }
        return try body()
    }

    /// Whether a wait that has lasted `waited` microseconds so far should go on.
    func shouldWait(waited: Int64) -> Bool {
        waited < timeoutMicroseconds && unwaited.load(ordering: .relaxed) == 0 && !abandoned.load(ordering: .acquiring)
    }
}
