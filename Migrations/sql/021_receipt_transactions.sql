-- migrator: edits sqlite_master
-- Legacy app receipts (specification section 16): a verified receipt is logged in `events`
-- with kind 'receipt' (raw: the receipt's bytes in base64, hash-chained like every event),
-- one event per original transaction id it holds. The events table's CHECK on `kind` is
-- loosened in place by editing its definition in sqlite_master: no row is copied, so
-- every existing event keeps its seq and hash, and the immutability triggers stay.
UPDATE sqlite_master
SET sql = replace(sql, 'kind IN (''notification''', 'kind IN (''receipt'', ''notification''')
WHERE type = 'table' AND name = 'events' AND instr(sql, '''receipt''') = 0;

-- The transactions a receipt's events carry, so that a customer is found by the
-- transaction id of a receipt's entry as by any signed transaction's. Written with the
-- events, in the same transaction; derived from them, never evidence.
CREATE TABLE receipt_transactions (
    transaction_id           TEXT NOT NULL,
    original_transaction_id  TEXT NOT NULL,
    PRIMARY KEY (transaction_id, original_transaction_id)
) STRICT, WITHOUT ROWID;
