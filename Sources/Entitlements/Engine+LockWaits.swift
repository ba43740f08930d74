extension Engine {
    /// Stops this engine's writes from waiting for a lock another process holds: a write
    /// waiting now gives up within a millisecond (`DATABASE_BUSY`), and later ones at once,
    /// until ``resumeLockWaits()``. For a server that is stopping (SIGTERM ends it within
    /// seconds, not a busy timeout later); writes that meet no lock are not touched.
    /// Safe from any thread.
    package func abandonLockWaits() { writerBusyWait.abandon() }

    /// Lets this engine's writes wait for another process's lock again, up to the busy timeout.
    package func resumeLockWaits() { writerBusyWait.resume() }
}
