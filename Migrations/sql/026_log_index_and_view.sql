-- No query looks events up by original transaction id (customers are found through
-- customer_links and customer_lookup; a transaction through events_by_transaction):
-- the index cost ~33 B an event.
DROP INDEX IF EXISTS events_by_original_transaction;

-- The view of each event's payload (012_compact_log.sql) finds nested JWS by path,
-- kept since 025 as the number of its slot or, in rows written before, as text.
DROP VIEW IF EXISTS events_decoded;
CREATE VIEW events_decoded AS
SELECT
    e.seq, e.identity, e.kind, e.event_id, e.customer_key, e.app_transaction_id,
    e.original_transaction_id, e.transaction_id, e.notification_type, e.subtype,
    e.signed_date, e.received_at,
    CASE WHEN e.body IS NULL THEN e.raw ELSE json_replace(e.body,
        '$.data.signedTransactionInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path IN (1, '$.data.signedTransactionInfo')),
            json_extract(e.body, '$.data.signedTransactionInfo')),
        '$.data.signedRenewalInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path IN (2, '$.data.signedRenewalInfo')),
            json_extract(e.body, '$.data.signedRenewalInfo')),
        '$.appData.signedAppTransactionInfo', coalesce(
            (SELECT json(n.payload) FROM jws_nested n WHERE n.event_seq = e.seq AND n.path IN (3, '$.appData.signedAppTransactionInfo')),
            json_extract(e.body, '$.appData.signedAppTransactionInfo'))
    ) END AS payload
FROM events e;
