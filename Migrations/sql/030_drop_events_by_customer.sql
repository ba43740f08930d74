-- `events_by_customer` dropped: no statement reads the log by customer through it. A
-- customer's events are read from `event_facts`, whose key is the same (customer, seq),
-- and every event about a customer has its row there (written in the same transaction;
-- the audit checks both ways); the log's own rows are then found by `seq`. The index
-- was written at a random place for every event, one leaf a notification on a big
-- database, and took about 33 bytes an event.
DROP INDEX IF EXISTS events_by_customer;
