-- migrator: edits sqlite_master
-- Usage records (specification section 11): the operator's word on what a customer used,
-- logged in `events` with kind 'usage' (raw: the record's canonical JSON, hash-chained
-- like every event). The events table's CHECK on `kind` is loosened in place by
-- editing its definition in sqlite_master: no row is copied, so every existing
-- event keeps its seq and hash, and the immutability triggers stay as they are.
UPDATE sqlite_master
SET sql = replace(sql, '''appTransaction'')', '''appTransaction'', ''usage'')')
WHERE type = 'table' AND name = 'events' AND instr(sql, '''usage''') = 0;

-- Open consumption requests are read without scanning the log.
CREATE INDEX IF NOT EXISTS events_consumption_requests ON events (signed_date)
    WHERE notification_type = 'CONSUMPTION_REQUEST';

-- Every Send Consumption Information request made (`consumption --send`) and
-- Apple's answer: an answered request is no longer pending.
CREATE TABLE consumption_answers (
    id              INTEGER PRIMARY KEY,
    transaction_id  TEXT    NOT NULL,
    sent_at         INTEGER NOT NULL,
    -- The ConsumptionRequest body sent (JSON).
    body            TEXT    NOT NULL,
    -- Apple's HTTP status; NULL when no answer came (a transport failure).
    status          INTEGER,
    error_code      TEXT,
    error_message   TEXT
) STRICT;
CREATE INDEX consumption_answers_by_transaction ON consumption_answers (transaction_id, sent_at);

CREATE TRIGGER consumption_answers_are_immutable_update BEFORE UPDATE ON consumption_answers
BEGIN SELECT RAISE(ABORT, 'consumption answers are immutable: UPDATE is not allowed'); END;
CREATE TRIGGER consumption_answers_are_immutable_delete BEFORE DELETE ON consumption_answers
BEGIN SELECT RAISE(ABORT, 'consumption answers are immutable: DELETE is not allowed'); END;
