-- Per customer, which lifecycle events of its data are recorded, in a compact form
-- read with one row: the 64-bit FNV-1a hash of each recorded id, 8 bytes
-- little-endian each, ascending. After a batch the store derives the customer's
-- events and inserts only those whose hash is absent, so a batch that adds nothing
-- new reads this row and writes nothing.
--
-- A summary, not evidence: every hash here is of an id `lifecycle` holds (events are
-- never deleted), and `lifecycle.id` stays UNIQUE (inserts are INSERT OR IGNORE), so
-- exactly-once holds whatever this table says. A customer without a row (data
-- recorded before this migration) is checked id by id, then given its row.
CREATE TABLE lifecycle_recorded (
    customer_key  TEXT PRIMARY KEY,
    id_hashes     BLOB NOT NULL
) STRICT, WITHOUT ROWID;
