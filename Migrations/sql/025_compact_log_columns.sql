-- migrator: edits sqlite_master
-- Smaller log rows, no row copied: a JWS signature is kept as its bytes (64 B for
-- ES256) instead of its base64url text (86 B), and a nested JWS's path as the number
-- of its slot (1 signedTransactionInfo, 2 signedRenewalInfo, 3 signedAppTransactionInfo)
-- instead of its text. The columns become ANY by editing their definitions in
-- sqlite_master (STRICT tables allow ANY; the text already stored is valid ANY), so
-- every existing event keeps its seq and hash, and rows of both forms are read. A
-- signature is kept as bytes only when encoding them again gives back its text byte
-- for byte (canonical base64url); any other stays text. See
-- Sources/EventStore/LogColumns.swift.
UPDATE sqlite_master
SET sql = replace(sql, '    signature                TEXT,', '    signature                ANY,')
WHERE type = 'table' AND name = 'events';
UPDATE sqlite_master
SET sql = replace(replace(sql,
    '    path       TEXT    NOT NULL,', '    path       ANY     NOT NULL,'),
    '    signature  TEXT    NOT NULL', '    signature  ANY     NOT NULL')
WHERE type = 'table' AND name = 'jws_nested';

