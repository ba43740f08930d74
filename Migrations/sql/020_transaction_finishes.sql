-- Finish Transaction (specification section 10.5): with
-- `appStoreServerAPI.finishTransactions`, each transaction the engine appends for the
-- first time that grants an entitlement or units is queued here in a short write
-- after its batch commits, then finished by a call to Apple made outside any write
-- transaction, and its answer recorded, so that a restart neither calls again for a
-- transaction finished nor forgets one still pending. `entitlements
-- finish-transaction` records its calls here too. Bookkeeping, not evidence: rows
-- change as calls are made (the event log's immutability does not apply here).
CREATE TABLE transaction_finishes (
    transaction_id   TEXT    NOT NULL PRIMARY KEY,
    environment      TEXT    NOT NULL,        -- Production or Sandbox: which of Apple's hosts
    state            TEXT    NOT NULL CHECK (state IN ('pending', 'finished', 'failed')),
    queued_at        INTEGER NOT NULL,        -- ms since 1970
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,        -- ms since 1970: a pending row is not called before
    finished_at      INTEGER,                 -- when Apple answered with success
    status           INTEGER,                 -- the last answer's HTTP status (NULL: no answer)
    error_code       INTEGER,                 -- Apple's errorCode of the last failure
    error_message    TEXT                     -- what went wrong last, for a person
) STRICT, WITHOUT ROWID;

CREATE INDEX transaction_finishes_due ON transaction_finishes (next_attempt_at) WHERE state = 'pending';
