-- Projections: the state of each customer, rebuilt from the log at will.
-- Written in the same transaction as the events they reflect. `generation`
-- lets a replay build the next state beside the current one and swap it in
-- one transaction.
CREATE TABLE projections (
    generation      INTEGER NOT NULL,
    customer_key    TEXT    NOT NULL,
    rules_version   TEXT    NOT NULL,
    last_event_seq  INTEGER NOT NULL,
    state           BLOB    NOT NULL,
    PRIMARY KEY (generation, customer_key)
) STRICT, WITHOUT ROWID;

-- Ways to find a customer: by originalTransactionId and by appAccountToken.
CREATE TABLE customer_lookup (
    kind          TEXT NOT NULL CHECK (kind IN ('originalTransactionId', 'appAccountToken')),
    value         TEXT NOT NULL,
    customer_key  TEXT NOT NULL,
    PRIMARY KEY (kind, value, customer_key)
) STRICT, WITHOUT ROWID;

-- Which generation is current, and the rules it was built with.
CREATE TABLE engine_state (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    generation     INTEGER NOT NULL,
    rules_version  TEXT    NOT NULL,
    rules_json     TEXT    NOT NULL
) STRICT;
INSERT INTO engine_state (id, generation, rules_version, rules_json) VALUES (1, 1, '', '');
