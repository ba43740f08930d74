-- `projections` and `projections_next` as rowid tables with (generation, customer) UNIQUE,
-- not WITHOUT ROWID. A WITHOUT ROWID table keeps whole rows in its interior pages as well
-- as in its leaves, and a customer's state takes about 1.2 KB: about thirteen rows to an
-- interior page, a tree six levels deep at 1,000,000 customers with ~6,900 interior pages
-- (110 MB) above its leaves, more than a writer's or a reader's page cache holds. An
-- update, or a query on a cold cache, then read an interior page besides its leaf. Now
-- the rows sit in the leaves alone, under interior pages of row numbers (about a thousand
-- to a page), and the index on (generation, customer) holds short entries (~30 MB at
-- 1,000,000 customers). A row keeps its number when it is written again (an upsert).
--
-- The rows are gathered in a temporary table and both tables dropped before the new ones
-- are made, so that these take the freed pages instead of growing the file. The retired
-- generation `projections_next` held is garbage that the next replay would have emptied.
CREATE TEMP TABLE projections_moved AS
    SELECT generation, customer_key, rules_version, last_event_seq, state FROM projections;

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

-- Numbered in the customers' order but inserted in no order: rows inserted in order fill
-- every leaf to the brim, and the first batches after the migration would then split
-- nearly every leaf they touch (a state grows as its customer renews); inserted at random
-- places, the leaves keep room, as in a table that grew with its customers.
INSERT INTO projections (row_id, generation, customer_key, rules_version, last_event_seq, state)
    SELECT row_number() OVER (ORDER BY generation, customer_key), generation, customer_key, rules_version, last_event_seq, state
    FROM temp.projections_moved
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
