import CSQLite

extension EventStore {
    /// Leaves every checkpoint to a replicator that reads the write-ahead log
    /// (Litestream): no automatic checkpoint after commits (`wal_autocheckpoint = 0`)
    /// and none when this connection closes. The `-wal` file then keeps what was
    /// committed until the replicator checkpoints.
    public func leaveCheckpointsToReplication() throws(StoreError) {
        guard mode != .readOnly else { return }
        try mapped {
            try connection.execute("PRAGMA wal_autocheckpoint = 0")
            guard csqlite_set_no_checkpoint_on_close(connection.handle, 1) == SQLITE_OK else {
                throw StoreError(code: .sqlite, message: "SQLite refused SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE on \(path)")
            }
        }
    }
}
