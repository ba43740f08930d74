-- Webhook delivery (specification section 12): where each endpoint stands in each feed,
-- the lines given up on, and the lease that lets one deliverer at a time work on
-- this database. Bookkeeping, not evidence: rows are replaced as delivery goes on.

-- One row per endpoint (its URL) and feed ('changes', 'lifecycle'). Every line at or
-- below delivered_cursor was delivered or marked failed; while the next line fails,
-- failing_cursor names it, failing_since is its first attempt and next_attempt_at
-- when it is tried again (ms since 1970).
CREATE TABLE webhook_positions (
    endpoint          TEXT    NOT NULL,
    feed              TEXT    NOT NULL CHECK (feed IN ('changes', 'lifecycle')),
    delivered_cursor  INTEGER NOT NULL DEFAULT 0,
    failing_cursor    INTEGER,
    failing_since     INTEGER,
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   INTEGER,
    last_error        TEXT,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (endpoint, feed)
) STRICT, WITHOUT ROWID;

-- Lines retried for 24 hours without a 2xx: the endpoint went on without them.
CREATE TABLE webhook_failed_lines (
    endpoint          TEXT    NOT NULL,
    feed              TEXT    NOT NULL,
    cursor            INTEGER NOT NULL,
    webhook_id        TEXT    NOT NULL,
    first_attempt_at  INTEGER NOT NULL,
    failed_at         INTEGER NOT NULL,
    attempts          INTEGER NOT NULL,
    last_error        TEXT,
    PRIMARY KEY (endpoint, feed, cursor)
) STRICT, WITHOUT ROWID;

-- The one deliverer of this database: who holds the lease and until when (ms since
-- 1970); it renews it while it delivers, and another takes it only once it expired
-- (or its holder, a process on the same host, is gone).
CREATE TABLE webhook_lease (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    holder      TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
