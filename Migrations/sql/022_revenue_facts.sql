-- Each customer's contribution to the revenue ledger and the metrics (specification
-- section 14): its sales, refunds and reversals in their own currency, and when each
-- of its subscriptions was active, started, converted and expired, in the engine's
-- binary codec. Written with the customer's lifecycle after every batch that touches
-- it and after a replay, so that `revenue` and `metrics` read one row per customer
-- instead of deriving everything from the log.
--
-- A cache, not evidence: a row counts only while its last_event_seq equals the
-- customer's projection's; any other row is derived again from the log when read.
-- Rates and rules are applied when the figures are read, so neither a new rates
-- file nor a rules change makes a row stale.
CREATE TABLE revenue_facts (
    customer_key    TEXT    PRIMARY KEY,
    last_event_seq  INTEGER NOT NULL,
    facts           BLOB    NOT NULL
) STRICT, WITHOUT ROWID;
