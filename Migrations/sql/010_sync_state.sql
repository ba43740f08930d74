-- Where `entitlements sync` resumes against the App Store Server API: the end of
-- the last successful Get Notification History run, and the Get Transaction
-- History revision reached per customer. Bookkeeping, not evidence: rows are
-- replaced as syncs progress (the event log's immutability does not apply here).
CREATE TABLE sync_state (
    key         TEXT    NOT NULL PRIMARY KEY,  -- 'notifications:<environment>', 'history:<environment>:<id>'
    value       TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL               -- ms since 1970
) STRICT, WITHOUT ROWID;
