-- Who the customer is (specification section 5). Facts stay filed under the key
-- each event carries (its appTransactionId, else otid:<originalTransactionId>).
-- An event with originalTransactionId X belongs to the customer X is linked
-- to, else to otid:X: a link arriving later merges otid:X into its
-- appTransactionId without touching a fact.

-- The winning link of each originalTransactionId: the latest-signed object
-- carrying both ids (then the greater raw JWS, found at ref_seq/ref_slot).
CREATE TABLE customer_links (
    original_transaction_id  TEXT    PRIMARY KEY,
    app_transaction_id       TEXT    NOT NULL,
    signed_date              INTEGER NOT NULL,
    ref_seq                  INTEGER NOT NULL,
    ref_slot                 INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX customer_links_by_app_transaction ON customer_links (app_transaction_id);

-- Every appTransactionId an originalTransactionId was ever linked to, kept
-- only for those linked to more than one (rare: conflicting links): facts of
-- X may then be filed under each of them.
CREATE TABLE link_conflicts (
    original_transaction_id  TEXT NOT NULL,
    app_transaction_id       TEXT NOT NULL,
    PRIMARY KEY (original_transaction_id, app_transaction_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX link_conflicts_by_app_transaction ON link_conflicts (app_transaction_id);

-- query --transaction-id finds the transaction's customer through this.
CREATE INDEX events_by_transaction ON events (transaction_id);

-- Links from the events logged before: each event carrying an appTransactionId
-- and an originalTransactionId, the latest-signed deciding (then the greater raw).
INSERT INTO customer_links (original_transaction_id, app_transaction_id, signed_date, ref_seq, ref_slot)
    SELECT original_transaction_id, app_transaction_id, signed_date, seq, 0 FROM (
        SELECT original_transaction_id, app_transaction_id, signed_date, seq,
               row_number() OVER (PARTITION BY original_transaction_id ORDER BY signed_date DESC, raw DESC, seq) AS rank
        FROM events WHERE original_transaction_id IS NOT NULL AND app_transaction_id IS NOT NULL)
    WHERE rank = 1;
INSERT INTO link_conflicts (original_transaction_id, app_transaction_id)
    SELECT DISTINCT original_transaction_id, app_transaction_id FROM events
    WHERE app_transaction_id IS NOT NULL AND original_transaction_id IN (
        SELECT original_transaction_id FROM events
        WHERE original_transaction_id IS NOT NULL AND app_transaction_id IS NOT NULL
        GROUP BY original_transaction_id HAVING count(DISTINCT app_transaction_id) > 1);

-- Projections made before kept otid:X apart from its appTransactionId: the
-- next command that writes rebuilds them once (a replay) when this row is present.
CREATE TABLE identity_rebuild_pending (id INTEGER PRIMARY KEY CHECK (id = 1)) STRICT;
INSERT INTO identity_rebuild_pending (id)
    SELECT 1 WHERE EXISTS (SELECT 1 FROM customer_links l WHERE EXISTS (
        SELECT 1 FROM projections p WHERE p.customer_key = 'otid:' || l.original_transaction_id))
        OR EXISTS (SELECT 1 FROM link_conflicts);
