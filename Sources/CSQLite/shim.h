#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro cast Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic; these wrap the calls the store needs.
static inline int csqlite_enable_defensive(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
}

/// Defensive mode on (1) or off (0): a migration that edits sqlite_master needs it off
/// for the length of its transaction (see Connection.editingSchema).
static inline int csqlite_set_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}

/// Closing the last connection checkpoints the write-ahead log unless this is on (1):
/// with replication, checkpoints are left to Litestream.
static inline int csqlite_set_no_checkpoint_on_close(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on, (int *)0);
}

/// sqlite3_config is variadic too. Memory statistics off (SQLITE_CONFIG_MEMSTATUS 0): each
/// of SQLite's allocations and frees then skips a process-wide mutex and its counters.
/// Only possible before SQLite is initialized: afterwards SQLite refuses (SQLITE_MISUSE)
/// and keeps counting.
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
