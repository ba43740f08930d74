-- Legacy app receipts (specification section 16): the transactions a receipt's events
-- carry, so that a customer is found by the transaction id of a receipt's entry as by
-- any signed transaction's. Written with the events, in the same transaction; derived
-- from them, never evidence.
CREATE TABLE receipt_transactions (
    transaction_id           TEXT NOT NULL,
    original_transaction_id  TEXT NOT NULL,
    PRIMARY KEY (transaction_id, original_transaction_id)
) STRICT, WITHOUT ROWID;
