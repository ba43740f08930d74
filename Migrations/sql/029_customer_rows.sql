-- One row per customer for what the feeds and the revenue ledger keep of it, written
-- together after every batch that touches the customer: the change feed's last reported
-- answer and the next moment it changes by time (from `reported_answers`), the lifecycle
-- feed's next moment an event becomes due (from `lifecycle_due`) and the hashes of the
-- ids recorded for its data (from `lifecycle_recorded`), and its revenue facts with the
-- projection's last event they were derived at (from `revenue_facts`). A batch then
-- changes one leaf of this table per customer instead of one in each of four tables.
--
-- A column is NULL where the table it replaces had no row: no answer reported, nothing
-- due, no ids kept (checked id by id, then kept), no facts kept (derived from the log).
-- A row whose columns are all NULL is deleted. The two moments are indexed where they
-- are set, so that finding what has become due reads nothing when nothing is. The blobs
-- come last, so that the moments are read without them.
--
-- A rowid table with the customer UNIQUE, not WITHOUT ROWID: its rows (about 1.5 KB,
-- mostly the revenue facts) are kept in the leaves alone, where a WITHOUT ROWID table
-- keeps whole rows in its interior pages too (about ten to a page: a deep tree whose
-- interior pages an update also writes). The index on the customer holds short entries.
-- The rows are gathered in a temporary table first and the four tables dropped before
-- the new one is made, so that it takes their pages instead of growing the file (a new
-- database on a small disk has little room).
CREATE TEMP TABLE customer_rows_moved AS
    SELECT k.customer_key AS customer_key, a.next_change_at AS next_change_at, d.next_due_at AS next_due_at,
        f.last_event_seq AS revenue_seq, a.answer AS answer, l.id_hashes AS id_hashes, f.facts AS revenue_facts
    FROM (
        SELECT customer_key FROM reported_answers
        UNION SELECT customer_key FROM lifecycle_due
        UNION SELECT customer_key FROM lifecycle_recorded
        UNION SELECT customer_key FROM revenue_facts
    ) k
    LEFT JOIN reported_answers a ON a.customer_key = k.customer_key
    LEFT JOIN lifecycle_due d ON d.customer_key = k.customer_key
    LEFT JOIN lifecycle_recorded l ON l.customer_key = k.customer_key
    LEFT JOIN revenue_facts f ON f.customer_key = k.customer_key;

DROP TABLE reported_answers;
DROP TABLE lifecycle_due;
DROP TABLE lifecycle_recorded;
DROP TABLE revenue_facts;

CREATE TABLE customer_rows (
    row_id          INTEGER PRIMARY KEY,
    customer_key    TEXT    NOT NULL UNIQUE,
    next_change_at  INTEGER,
    next_due_at     INTEGER,
    revenue_seq     INTEGER,
    answer          ANY,
    id_hashes       BLOB,
    revenue_facts   BLOB
) STRICT;

-- The rows are numbered in the customers' order but inserted in no order: rows inserted
-- in order fill every leaf to the brim, and the first batches after the migration would
-- then split nearly every leaf they touch (rows grow as customers renew); inserted at
-- random places, the leaves keep room, as in a table that grew with its customers.
INSERT INTO customer_rows (row_id, customer_key, next_change_at, next_due_at, revenue_seq, answer, id_hashes, revenue_facts)
    SELECT row_number() OVER (ORDER BY customer_key), customer_key, next_change_at, next_due_at, revenue_seq, answer, id_hashes,
        revenue_facts
    FROM temp.customer_rows_moved
    ORDER BY random();
DROP TABLE temp.customer_rows_moved;

CREATE INDEX customer_rows_by_next_change ON customer_rows (next_change_at) WHERE next_change_at IS NOT NULL;
CREATE INDEX customer_rows_by_next_due ON customer_rows (next_due_at) WHERE next_due_at IS NOT NULL;
