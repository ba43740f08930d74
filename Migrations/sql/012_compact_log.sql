-- The log in parts: a JWS Apple signs carries its certificate chain in
-- its header (4-5 KB, the same for every JWS signed with one certificate), and a
-- notification repeats it three times (its own, and its nested transaction's and
-- renewal info's, base64url-encoded once more inside its payload). The log now
-- keeps each distinct header once, a notification's nested JWS once as objects of
-- their own, and every payload decoded. The JWS is given back byte for byte from
-- its parts (see Sources/EventStore/StoredJWS.swift), so every event keeps its seq
-- and its hash: the chain is computed over the JWS, not over how it is stored.
--
-- This migration rewrites an existing log in one transaction: interrupted, it
-- leaves the database as it was. Between the two halves of this file, the engine
-- copies every event into `events_compact` in its new form, checking that the new
-- form gives back the stored JWS exactly (an event whose JWS would not is kept
-- whole, in `raw`), then drops the old table and renames the new one.

-- Each distinct JWS header (its base64url text as received), once.
CREATE TABLE jws_headers (
    id      INTEGER PRIMARY KEY,
    header  TEXT    NOT NULL UNIQUE
) STRICT;

-- The JWS nested in a notification's payload, each once, as an object of its own:
-- its header (by id), its payload decoded, its signature. `position` is the byte
-- offset in the notification's `body` where the JWS's text goes back.
CREATE TABLE jws_nested (
    event_seq  INTEGER NOT NULL,
    position   INTEGER NOT NULL,
    -- Where the JWS sits in the notification's payload ('$.data.signedTransactionInfo').
    path       TEXT    NOT NULL,
    header_id  INTEGER NOT NULL,
    -- The decoded payload: JSON exactly as signed.
    payload    TEXT    NOT NULL,
    signature  TEXT    NOT NULL,
    PRIMARY KEY (event_seq, position)
) STRICT, WITHOUT ROWID;

CREATE TABLE events_compact (
    seq                      INTEGER PRIMARY KEY,
    -- Idempotency key (see 001_events.sql).
    identity                 TEXT    NOT NULL UNIQUE,
    kind                     TEXT    NOT NULL
        CHECK (kind IN ('notification', 'transaction', 'renewalInfo', 'appTransaction', 'usage')),
    event_id                 TEXT    NOT NULL,
    customer_key             TEXT,
    app_transaction_id       TEXT,
    original_transaction_id  TEXT,
    transaction_id           TEXT,
    notification_type        TEXT,
    subtype                  TEXT,
    signed_date              INTEGER NOT NULL,
    received_at              INTEGER NOT NULL,
    -- A JWS in parts: its header (jws_headers.id), its payload decoded (JSON exactly
    -- as signed, each nested JWS's text cut out: see jws_nested), its signature.
    header_id                INTEGER,
    body                     TEXT,
    signature                TEXT,
    -- The input exactly as received when it is not kept in parts: a usage record's
    -- canonical JSON, or a JWS whose parts would not give back its bytes.
    raw                      TEXT,
    -- Tamper evidence: hash = SHA-256(prev_hash || seq || identity || 0 || JWS), chained
    -- from 32 zero bytes; the JWS is `raw`, or the one the parts give back.
    prev_hash                BLOB    NOT NULL,
    hash                     BLOB    NOT NULL,
    CHECK (raw IS NOT NULL OR (header_id IS NOT NULL AND body IS NOT NULL AND signature IS NOT NULL))
) STRICT;

-- The headers and nested JWS are the log as much as the events are.
CREATE TRIGGER jws_headers_are_immutable_update BEFORE UPDATE ON jws_headers
BEGIN SELECT RAISE(ABORT, 'JWS headers are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER jws_headers_are_immutable_delete BEFORE DELETE ON jws_headers
BEGIN SELECT RAISE(ABORT, 'JWS headers are immutable: DELETE is not allowed'); END;
CREATE TRIGGER jws_nested_are_immutable_update BEFORE UPDATE ON jws_nested
BEGIN SELECT RAISE(ABORT, 'nested JWS are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER jws_nested_are_immutable_delete BEFORE DELETE ON jws_nested
BEGIN SELECT RAISE(ABORT, 'nested JWS are immutable: DELETE is not allowed'); END;

-- migrator: step compact-log

-- The old table's indexes and triggers are made again on the new one by the step
-- (each with its SQL as it was); the view below shows each event's payload as
-- `verify` prints it, nested JWS decoded in place, for people reading the
-- database with the sqlite3 tool:
--   sqlite3 DB "SELECT seq, kind, payload FROM events_decoded ORDER BY seq DESC LIMIT 5"
CREATE VIEW events_decoded AS
SELECT
    e.seq, e.identity, e.kind, e.event_id, e.customer_key, e.app_transaction_id,
    e.original_transaction_id, e.transaction_id, e.notification_type, e.subtype,
    e.signed_date, e.received_at,
    CASE WHEN e.body IS NULL THEN e.raw ELSE json_replace(e.body,
        '$.data.signedTransactionInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path = '$.data.signedTransactionInfo'),
            json_extract(e.body, '$.data.signedTransactionInfo')),
        '$.data.signedRenewalInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path = '$.data.signedRenewalInfo'),
            json_extract(e.body, '$.data.signedRenewalInfo')),
        '$.appData.signedAppTransactionInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path = '$.appData.signedAppTransactionInfo'),
            json_extract(e.body, '$.appData.signedAppTransactionInfo'))
    ) END AS payload
FROM events e;
