-- The change feed (specification section 8): every change to a customer's active
-- entitlements, recorded in the same transaction as what caused it. Never
-- updated or deleted: a cursor, once read, keeps meaning the same line.
CREATE TABLE changes (
    cursor        INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_key  TEXT    NOT NULL,
    entitlement   TEXT    NOT NULL,
    active        INTEGER NOT NULL CHECK (active IN (0, 1)),
    expires_date  INTEGER,
    effective_at  INTEGER NOT NULL,
    recorded_at   INTEGER NOT NULL,
    cause         TEXT    NOT NULL CHECK (cause IN ('event', 'rules', 'merge', 'time'))
) STRICT;

CREATE TRIGGER changes_are_immutable_update BEFORE UPDATE ON changes
BEGIN SELECT RAISE(ABORT, 'changes are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER changes_are_immutable_delete BEFORE DELETE ON changes
BEGIN SELECT RAISE(ABORT, 'changes are immutable: DELETE is not allowed'); END;

-- Per customer, the last answer the feed reported (active entitlements and their
-- expiresDate, as JSON) and the next moment that answer changes by time alone,
-- indexed so that finding what has become due reads nothing when nothing is.
CREATE TABLE reported_answers (
    customer_key    TEXT    PRIMARY KEY,
    answer          TEXT    NOT NULL,
    next_change_at  INTEGER
) STRICT, WITHOUT ROWID;

CREATE INDEX reported_answers_by_next_change ON reported_answers (next_change_at) WHERE next_change_at IS NOT NULL;

-- Whether the feed has followed the log from its start. A database that held
-- events before this migration starts its feed at its next replay.
CREATE TABLE change_feed_state (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    complete  INTEGER NOT NULL
) STRICT;
INSERT INTO change_feed_state (id, complete) SELECT 1, NOT EXISTS (SELECT 1 FROM events);
