-- The lifecycle feed in smaller rows (specification section 12). A line is kept as
-- what cannot be rebuilt, and its JSON is written again when it is read:
--
-- - `cursor` is the rowid. Rows are never deleted (the triggers below), so a new row's
--   cursor, one past the largest, is never one that was read before.
-- - The id is `<TYPE>:<tail>`: kept as the type's number (below) and the tail, an
--   INTEGER when the tail is a decimal number written as SQLite would print it (no
--   sign, no leading zero, at most 18 digits), else TEXT. The same id always gives
--   the same pair, so UNIQUE (type, id_tail) keeps each id once.
-- - `customer_key`, `original_transaction_id` and `transaction_id` the same way
--   (INTEGER when such a number, else TEXT, NULL for none); a zero-length BLOB in
--   `transaction_id` means "the id's tail".
-- - `shape`: what many lines share (product, entitlements, environment, currency, the
--   type's fields that repeat), kept once in `lifecycle_shapes`; the type's other
--   fields (dates, amounts, ids) in `extra`, a JSON array of their values in order.
-- - A row with no `shape` was recorded before this migration: `extra` holds its
--   values as the older table kept them, `[originalTransactionId, transactionId,
--   productId, entitlements, environment, price, currency, {the type's fields}]`.
--
-- Type numbers: 1 SUBSCRIPTION_STARTED, 2 RENEWAL, 3 PRODUCT_CHANGE,
-- 4 AUTO_RENEW_DISABLED, 5 AUTO_RENEW_ENABLED, 6 BILLING_ISSUE, 7 EXPIRATION,
-- 8 PURCHASE, 9 REFUND, 10 FAMILY_REVOKE, 11 REFUND_REVERSED, 12 CONSUMPTION_REQUEST,
-- 13 CONSENT_RESCINDED, 14 CUSTOMER_MERGED, 15 GRANT_STARTED, 16 GRANT_ENDED,
-- 17 GRANT_REVOKED, 18 TRANSFER.
CREATE TABLE lifecycle_shapes (
    shape  INTEGER PRIMARY KEY,
    value  TEXT    NOT NULL UNIQUE
) STRICT;

CREATE TRIGGER lifecycle_shapes_are_immutable_update BEFORE UPDATE ON lifecycle_shapes
BEGIN SELECT RAISE(ABORT, 'lifecycle shapes are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER lifecycle_shapes_are_immutable_delete BEFORE DELETE ON lifecycle_shapes
BEGIN SELECT RAISE(ABORT, 'lifecycle shapes are immutable: DELETE is not allowed'); END;

CREATE TABLE lifecycle_events (
    cursor                   INTEGER PRIMARY KEY,
    type                     INTEGER NOT NULL,
    id_tail                  ANY     NOT NULL,
    customer_key             ANY     NOT NULL,
    effective_at             INTEGER NOT NULL,
    recorded_at              INTEGER NOT NULL,
    shape                    INTEGER,
    original_transaction_id  ANY,
    transaction_id           ANY,
    price                    INTEGER,
    extra                    TEXT,
    UNIQUE (type, id_tail)
) STRICT;

-- An older row whose id is not `<TYPE>:...`, or of a type not listed, has no number:
-- NOT NULL on `type` stops the migration rather than leave the row behind.
INSERT INTO lifecycle_events (cursor, type, id_tail, customer_key, effective_at, recorded_at, extra)
SELECT cursor, code, CASE
        WHEN tail <> '' AND tail NOT GLOB '*[^0-9]*' AND (tail = '0' OR tail NOT GLOB '0*') AND length(tail) <= 18
        THEN CAST(tail AS INTEGER) ELSE tail END,
    customer_key, effective_at, recorded_at, fields
FROM (
    SELECT cursor, substr(id, length(type) + 2) AS tail, customer_key, effective_at, recorded_at, fields,
        CASE WHEN substr(id, 1, length(type) + 1) = type || ':' THEN CASE type
            WHEN 'SUBSCRIPTION_STARTED' THEN 1 WHEN 'RENEWAL' THEN 2 WHEN 'PRODUCT_CHANGE' THEN 3
            WHEN 'AUTO_RENEW_DISABLED' THEN 4 WHEN 'AUTO_RENEW_ENABLED' THEN 5 WHEN 'BILLING_ISSUE' THEN 6
            WHEN 'EXPIRATION' THEN 7 WHEN 'PURCHASE' THEN 8 WHEN 'REFUND' THEN 9 WHEN 'FAMILY_REVOKE' THEN 10
            WHEN 'REFUND_REVERSED' THEN 11 WHEN 'CONSUMPTION_REQUEST' THEN 12 WHEN 'CONSENT_RESCINDED' THEN 13
            WHEN 'CUSTOMER_MERGED' THEN 14 WHEN 'GRANT_STARTED' THEN 15 WHEN 'GRANT_ENDED' THEN 16
            WHEN 'GRANT_REVOKED' THEN 17 WHEN 'TRANSFER' THEN 18
        END END AS code
    FROM lifecycle
)
ORDER BY cursor;

DROP TRIGGER lifecycle_is_immutable_update;
DROP TRIGGER lifecycle_is_immutable_delete;
DROP TABLE lifecycle;

CREATE TRIGGER lifecycle_events_are_immutable_update BEFORE UPDATE ON lifecycle_events
BEGIN SELECT RAISE(ABORT, 'lifecycle events are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER lifecycle_events_are_immutable_delete BEFORE DELETE ON lifecycle_events
BEGIN SELECT RAISE(ABORT, 'lifecycle events are immutable: DELETE is not allowed'); END;

-- The feed as people read it with sqlite3: each line's cursor, id, customer, type and times.
CREATE VIEW lifecycle (cursor, id, customer_key, type, effective_at, recorded_at) AS
SELECT cursor, name || ':' || id_tail, customer_key, name, effective_at, recorded_at
FROM lifecycle_events JOIN (
    SELECT 1 AS code, 'SUBSCRIPTION_STARTED' AS name UNION ALL SELECT 2, 'RENEWAL' UNION ALL SELECT 3, 'PRODUCT_CHANGE'
    UNION ALL SELECT 4, 'AUTO_RENEW_DISABLED' UNION ALL SELECT 5, 'AUTO_RENEW_ENABLED' UNION ALL SELECT 6, 'BILLING_ISSUE'
    UNION ALL SELECT 7, 'EXPIRATION' UNION ALL SELECT 8, 'PURCHASE' UNION ALL SELECT 9, 'REFUND'
    UNION ALL SELECT 10, 'FAMILY_REVOKE' UNION ALL SELECT 11, 'REFUND_REVERSED' UNION ALL SELECT 12, 'CONSUMPTION_REQUEST'
    UNION ALL SELECT 13, 'CONSENT_RESCINDED' UNION ALL SELECT 14, 'CUSTOMER_MERGED' UNION ALL SELECT 15, 'GRANT_STARTED'
    UNION ALL SELECT 16, 'GRANT_ENDED' UNION ALL SELECT 17, 'GRANT_REVOKED' UNION ALL SELECT 18, 'TRANSFER'
) ON code = type;
