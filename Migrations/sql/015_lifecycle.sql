-- The lifecycle feed (specification section 12): what happened to each customer (a
-- renewal, a cancellation, a refund ...), recorded once per event id in the same
-- transaction as what caused it. Never updated or deleted: a cursor, once read,
-- keeps meaning the same line. `fields` holds the rest of the printed line, its
-- values alone: [originalTransactionId, transactionId, productId, entitlements,
-- environment, price, currency, {the type's own fields}].
CREATE TABLE lifecycle (
    cursor        INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT    NOT NULL UNIQUE,
    customer_key  TEXT    NOT NULL,
    type          TEXT    NOT NULL,
    effective_at  INTEGER NOT NULL,
    recorded_at   INTEGER NOT NULL,
    fields        TEXT    NOT NULL
) STRICT;

CREATE TRIGGER lifecycle_is_immutable_update BEFORE UPDATE ON lifecycle
BEGIN SELECT RAISE(ABORT, 'lifecycle events are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER lifecycle_is_immutable_delete BEFORE DELETE ON lifecycle
BEGIN SELECT RAISE(ABORT, 'lifecycle events are immutable: DELETE is not allowed'); END;

-- Per customer, the next moment an event of its data becomes due by time alone
-- (an expiry), indexed so that finding what has become due reads nothing when nothing is.
CREATE TABLE lifecycle_due (
    customer_key  TEXT    PRIMARY KEY,
    next_due_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX lifecycle_due_by_time ON lifecycle_due (next_due_at);

-- Whether the feed has followed the log from its start. A database that held
-- events before this migration starts its feed at its next replay.
CREATE TABLE lifecycle_feed_state (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    complete  INTEGER NOT NULL
) STRICT;
INSERT INTO lifecycle_feed_state (id, complete) SELECT 1, NOT EXISTS (SELECT 1 FROM events);
