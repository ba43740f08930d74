-- The generation a replay is building, beside the current one in `projections`.
-- The swap renames the two tables in one transaction, so that the previous
-- generation is then emptied as a whole table (SQLite's truncation, which frees
-- pages without visiting rows) instead of row by row.
CREATE TABLE projections_next (
    generation      INTEGER NOT NULL,
    customer_key    TEXT    NOT NULL,
    rules_version   TEXT    NOT NULL,
    last_event_seq  INTEGER NOT NULL,
    state           BLOB    NOT NULL,
    PRIMARY KEY (generation, customer_key)
) STRICT, WITHOUT ROWID;
