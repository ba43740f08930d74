-- A projection's row numbered by its customer: the row of a customer whose key is a
-- decimal number without a leading zero that fits in 64 bits (an appTransactionId: Apple's
-- are 18 digits) is numbered with that number, so that a lookup of that customer reads the
-- table's leaf alone. Numbered in order of arrival, a lookup read a leaf of the index on
-- (generation, customer) first, then the table's leaf: at 1,000,000 customers that index
-- has ~1,900 leaves, and a cold query read one of them besides the row's. Every other key
-- (`otid:`, names a test gives) is numbered below zero, -1 then downwards, so the two
-- kinds never meet; such a row is found through the index, as before.
--
-- Each table holds one generation: `projections` the current one, `projections_next` the
-- one a replay builds. Rows of other generations in `projections` (left by builds before
-- `projections_next` existed), and the retired or unfinished generation in
-- `projections_next`, are garbage that the next replay would have emptied: not moved.
-- Rows move through a temporary table, both tables dropped first so that the new one
-- takes their pages, inserted in no order so that the leaves keep room (as in 031).
CREATE TEMP TABLE projections_moved AS
    SELECT generation, customer_key, rules_version, last_event_seq, state FROM projections
    WHERE generation = (SELECT generation FROM engine_state WHERE id = 1)
        OR NOT EXISTS (SELECT 1 FROM engine_state WHERE id = 1);

DROP TABLE projections;
DROP TABLE projections_next;

CREATE TABLE projections (
    row_id          INTEGER PRIMARY KEY,
    generation      INTEGER NOT NULL,
    customer_key    TEXT    NOT NULL,
    rules_version   TEXT    NOT NULL,
    last_event_seq  INTEGER NOT NULL,
    state           BLOB    NOT NULL,
    UNIQUE (generation, customer_key)
) STRICT;

-- The test of a customer number, as `EventStore.projectionRowNumber(of:)` makes it: only
-- the digits 0-9, the first not 0, at most 19 of them and no more than 9223372036854775807.
INSERT INTO projections (row_id, generation, customer_key, rules_version, last_event_seq, state)
    SELECT
        CASE WHEN numbered THEN CAST(customer_key AS INTEGER)
            ELSE -row_number() OVER (PARTITION BY numbered ORDER BY generation, customer_key) END,
        generation, customer_key, rules_version, last_event_seq, state
    FROM (
        SELECT *, (customer_key GLOB '[1-9]*' AND customer_key NOT GLOB '*[^0-9]*'
            AND (length(customer_key) < 19 OR (length(customer_key) = 19 AND customer_key <= '9223372036854775807'))) AS numbered
        FROM temp.projections_moved)
    ORDER BY random();
DROP TABLE temp.projections_moved;

-- The generation a replay builds, the same shape: the swap renames the two tables.
CREATE TABLE projections_next (
    row_id          INTEGER PRIMARY KEY,
    generation      INTEGER NOT NULL,
    customer_key    TEXT    NOT NULL,
    rules_version   TEXT    NOT NULL,
    last_event_seq  INTEGER NOT NULL,
    state           BLOB    NOT NULL,
    UNIQUE (generation, customer_key)
) STRICT;
