-- The change feed keeps each customer's last reported answer in the engine's binary
-- codec (as the projections keep their state), not as JSON text parsed and rewritten on
-- every append: the column takes a BLOB. Rows written before keep their JSON text, which
-- the engine still reads, until the customer's answer is next written.
CREATE TABLE reported_answers_codec (
    customer_key    TEXT    PRIMARY KEY,
    answer          ANY     NOT NULL,
    next_change_at  INTEGER
) STRICT, WITHOUT ROWID;
INSERT INTO reported_answers_codec (customer_key, answer, next_change_at)
    SELECT customer_key, answer, next_change_at FROM reported_answers;
DROP TABLE reported_answers;
ALTER TABLE reported_answers_codec RENAME TO reported_answers;
CREATE INDEX reported_answers_by_next_change ON reported_answers (next_change_at) WHERE next_change_at IS NOT NULL;
