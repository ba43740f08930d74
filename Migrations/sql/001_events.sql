-- The event log: every verified input, appended once, never changed.
-- `seq` is the order of arrival; the reducers never use it to decide anything.
CREATE TABLE events (
    seq                      INTEGER PRIMARY KEY,
    -- Idempotency key: notification:<notificationUUID>,
    -- transaction:<transactionId>:<signedDate>, renewalInfo:<originalTransactionId>:<signedDate>,
    -- appTransaction:<appTransactionId>:<receiptCreationDate>.
    identity                 TEXT    NOT NULL UNIQUE,
    kind                     TEXT    NOT NULL
        CHECK (kind IN ('notification', 'transaction', 'renewalInfo', 'appTransaction')),
    -- What `ingest` reports as eventId.
    event_id                 TEXT    NOT NULL,
    -- appTransactionId, or otid:<originalTransactionId>; NULL for events about no customer (TEST).
    customer_key             TEXT,
    app_transaction_id       TEXT,
    original_transaction_id  TEXT,
    transaction_id           TEXT,
    notification_type        TEXT,
    subtype                  TEXT,
    signed_date              INTEGER NOT NULL,
    received_at              INTEGER NOT NULL,
    -- The decoded payload (JSON); in a notification, the nested JWS are decoded in place.
    payload                  TEXT    NOT NULL,
    -- Unused (NULL): kept so that databases made by earlier builds open unchanged.
    nested_payloads          TEXT,
    -- The JWS exactly as received.
    raw                      TEXT    NOT NULL,
    -- Tamper evidence: hash = SHA-256(prev_hash || seq || identity || raw), chained from 32 zero bytes.
    prev_hash                BLOB    NOT NULL,
    hash                     BLOB    NOT NULL
) STRICT;

CREATE INDEX events_by_customer ON events (customer_key, seq);
CREATE INDEX events_by_original_transaction ON events (original_transaction_id);

-- The facts the reducers read, in a compact binary form, clustered by customer
-- so that replay streams one customer at a time.
CREATE TABLE event_facts (
    customer_key  TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    facts         BLOB    NOT NULL,
    PRIMARY KEY (customer_key, seq)
) STRICT, WITHOUT ROWID;

-- The database itself refuses to change the log, whoever asks.
CREATE TRIGGER events_are_immutable_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER events_are_immutable_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are immutable: DELETE is not allowed'); END;
CREATE TRIGGER event_facts_are_immutable_update BEFORE UPDATE ON event_facts
BEGIN SELECT RAISE(ABORT, 'event facts are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER event_facts_are_immutable_delete BEFORE DELETE ON event_facts
BEGIN SELECT RAISE(ABORT, 'event facts are immutable: DELETE is not allowed'); END;
