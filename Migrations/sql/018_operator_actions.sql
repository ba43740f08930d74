-- migrator: edits sqlite_master
-- Operator actions (specification section 13): grants, their revocations, credits and
-- links to app users, logged in `events` with kinds 'grant', 'grant_revoked', 'credit'
-- and 'link' (raw: the record's canonical JSON, hash-chained like every event). The
-- events table's CHECK on `kind` is loosened in place, as 011_usage.sql did: no row
-- is copied, every event keeps its seq and hash, the immutability triggers stay.
UPDATE sqlite_master
SET sql = replace(sql, '''usage'')', '''usage'', ''grant'', ''grant_revoked'', ''credit'', ''link'')')
WHERE type = 'table' AND name = 'events' AND instr(sql, '''grant_revoked''') = 0;

-- Every customer an app user was ever linked to (the key the link was filed under).
-- Rows are only added: which link stands is decided from the customer's state, so
-- `query --app-user-id` reads these candidates and keeps those still linked.
CREATE TABLE app_user_links (
    app_user_id   TEXT NOT NULL,
    customer_key  TEXT NOT NULL,
    PRIMARY KEY (app_user_id, customer_key)
) STRICT, WITHOUT ROWID;
