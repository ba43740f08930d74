-- Every rejected input, kept with why it was rejected: nothing handed to the
-- engine is silently dropped. One row per distinct input (by SHA-256).
CREATE TABLE quarantine (
    id           INTEGER PRIMARY KEY,
    input_hash   BLOB    NOT NULL UNIQUE,
    received_at  INTEGER NOT NULL,
    code         TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    -- The input as received (the first `limit` bytes of an oversized one).
    raw          BLOB    NOT NULL,
    size         INTEGER NOT NULL
) STRICT;

CREATE TRIGGER quarantine_is_immutable_update BEFORE UPDATE ON quarantine
BEGIN SELECT RAISE(ABORT, 'quarantine rows are immutable: UPDATE is not allowed'); END;
