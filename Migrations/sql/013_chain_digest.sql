-- The hash chain takes each new event's input by its SHA-256 digest (chain version 2):
--
--   version 1, events logged before this migration:
--     hash = SHA-256(prev_hash || seq || identity || 0x00 || input)
--   version 2, events from chain_digest_from on:
--     hash = SHA-256(prev_hash || seq || identity || 0x01 || SHA-256(input))
--
-- with seq as 8 bytes big-endian, identity as UTF-8, and input the JWS exactly as
-- received (or a usage record's canonical JSON). The verifier computes SHA-256 of the
-- whole JWS on its way to the signature's digest (the state after header.payload,
-- continued with "." and the signature), so the append no longer hashes 5-20 KB per
-- event; the chain commits to every byte as before. Events already logged keep their
-- hashes: the chain switches at the first seq after them (1 in a new database).
ALTER TABLE engine_state ADD COLUMN chain_digest_from INTEGER NOT NULL DEFAULT 1;
UPDATE engine_state SET chain_digest_from = (SELECT coalesce(max(seq), 0) + 1 FROM events);
