-- migrator: edits sqlite_master
-- A CHECK that a column is one of more than two constants, written `x IN (...)`, made
-- SQLite build a temporary index of the constants on every execution of an INSERT into
-- the table (about 25,000 instructions: a b-tree opened, created and filled, for a
-- check of one value). The same checks are written as comparisons joined by OR, which
-- accept and refuse exactly the same values and cost a few comparisons. Only the
-- definitions in sqlite_master change (every stored row already satisfies them), as
-- 011_usage.sql and 018_operator_actions.sql loosened the log's check in place.
UPDATE sqlite_master
SET sql = replace(sql,
    'CHECK (kind IN (''receipt'', ''notification'', ''transaction'', ''renewalInfo'', ''appTransaction'', ''usage'', ''grant'', ''grant_revoked'', ''credit'', ''link''))',
    'CHECK (kind = ''receipt'' OR kind = ''notification'' OR kind = ''transaction'' OR kind = ''renewalInfo'' OR kind = ''appTransaction'' OR kind = ''usage'' OR kind = ''grant'' OR kind = ''grant_revoked'' OR kind = ''credit'' OR kind = ''link'')')
WHERE type = 'table' AND name = 'events';
UPDATE sqlite_master
SET sql = replace(sql,
    'CHECK (cause IN (''event'', ''rules'', ''merge'', ''time''))',
    'CHECK (cause = ''event'' OR cause = ''rules'' OR cause = ''merge'' OR cause = ''time'')')
WHERE type = 'table' AND name = 'changes';
UPDATE sqlite_master
SET sql = replace(sql,
    'CHECK (state IN (''pending'', ''finished'', ''failed''))',
    'CHECK (state = ''pending'' OR state = ''finished'' OR state = ''failed'')')
WHERE type = 'table' AND name = 'transaction_finishes';
