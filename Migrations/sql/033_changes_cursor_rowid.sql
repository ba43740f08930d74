-- migrator: edits sqlite_master
-- The change feed's cursor is the rowid without AUTOINCREMENT, as the lifecycle feed's
-- is: rows of `changes` are never deleted (its triggers refuse it), so a new row's
-- cursor, one past the largest, is never one that was read before. AUTOINCREMENT kept
-- the same numbers at the cost of reading and rewriting the table's row in
-- sqlite_sequence on every insert. The keyword is taken out of the table's definition
-- in sqlite_master (the table's pages are the same with or without it), so no row is
-- copied and every cursor stays; the table's row in sqlite_sequence goes with it.
UPDATE sqlite_master
SET sql = replace(sql, 'cursor        INTEGER PRIMARY KEY AUTOINCREMENT,', 'cursor        INTEGER PRIMARY KEY,')
WHERE type = 'table' AND name = 'changes';
DELETE FROM sqlite_sequence WHERE name = 'changes';
