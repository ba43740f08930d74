/// The help texts: `entitlements --help` and `entitlements COMMAND --help`.
enum Help {
    static let overview = """
        entitlements — an event-sourced entitlement engine for App Store in-app purchases.

        It verifies the data Apple signs (App Store Server Notifications V2, signed
        transactions, renewal info, app transactions) against Apple's root, appends what
        it verified to an immutable SQLite log, and answers what each customer
        (appTransactionId) may use at any moment.

        USAGE
          entitlements ingest  [--db PATH] --config PATH [--workers N] [--batch N] [FILE ...]
          entitlements query   [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID | --app-user-id U) [--at TIME] [--pretty]
          entitlements replay  [--db PATH] --config PATH [--diff] [--reverify] [--check] [--progress | --quiet]
          entitlements verify  --config PATH [FILE ...]
          entitlements audit   [--db PATH] --config PATH [--expect-head SEQ:HASH] [--progress]
          entitlements history [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID) [--until MS]
          entitlements changes [--db PATH] --config PATH [--since CURSOR] [--limit N] [--follow]
          entitlements lifecycle [--db PATH] --config PATH [--since CURSOR] [--limit N] [--follow]
          entitlements revenue [--db PATH] --config PATH [--from TIME] [--to TIME]
          entitlements metrics [--db PATH] --config PATH --from TIME --to TIME [--interval day|week|month]
          entitlements sign    --config PATH (api-token | promotional-offer ... | intro-offer-eligibility ... | promotional-offer-v1 ...)
          entitlements sync    [--db PATH] --config PATH (--notifications [--start MS] [--only-failures] | --customer ID) [--environment E]
          entitlements set-account-token [--db PATH] --config PATH --original-transaction-id ID --app-account-token UUID
          entitlements serve   [--db PATH] --config PATH [--listen HOST:PORT]
          entitlements usage   [--db PATH] --config PATH --id ID (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID) (--currency C --units N | --transaction-id T --consumed MILLIPERCENT) [--at MS]
          entitlements grant   [--db PATH] --config PATH --id ID (customer | --app-user-id U) --entitlement E (--until TIME | --days N) [--from TIME] [--reason TEXT]
          entitlements revoke-grant [--db PATH] --config PATH --id ID [--at TIME]
          entitlements credit  [--db PATH] --config PATH --id ID (customer | --app-user-id U) --currency C --units N [--reason TEXT]
          entitlements link    [--db PATH] --config PATH --id ID --app-user-id U (customer)
          entitlements consumption [--db PATH] --config PATH (--transaction-id T [--send] ... | --pending)
          entitlements deliver [--db PATH] --config PATH [--once]
          entitlements webhooks [--db PATH] --config PATH (status | redeliver --url U [--feed lifecycle|changes] --since CURSOR)
          entitlements recover [--db PATH] --config PATH [--environment E] [--expect-head SEQ:HASH]
          entitlements transaction-info [--db PATH] --config PATH --transaction-id T
          entitlements refund-history [--db PATH] --config PATH --customer ID
          entitlements lookup-order [--db PATH] --config PATH --order-id O [--pretty]
          entitlements finish-transaction [--db PATH] --config PATH --transaction-id T
          entitlements extend --config PATH (--original-transaction-id X --days N --reason 0-3 --request-id R | --mass --product P --days N --reason 0-3 [--storefront CC]... [--request-id R] | --status --product P --request-id R)
          entitlements test-notification [--db PATH] --config PATH [--wait SECONDS]
          entitlements migrate-receipts [--db PATH] --config PATH FILE
          entitlements demo [--keep DIR] [--serve [--listen HOST:PORT]]
          entitlements --version

        Run `entitlements COMMAND --help` for a command's options; any other option is a usage error.

        COMMON OPTIONS
          --db PATH       the SQLite database (default: entitlements.sqlite in the working directory)
          --config PATH   the JSON configuration: bundleId, appAppleId, environment, rootCertificates, rules
          TIME            (--at, --until, --start) milliseconds since 1970 UTC, or ISO 8601 UTC such as
                          2026-11-23T10:00:00Z; an integer below 100000000000 (seconds?) is refused

        EXIT CODES
          0  success; 1  something was rejected or not found; 2  usage or configuration error
          (also an address serve cannot listen on); 3  the database could not be used (read-only,
          full, corrupt, a --db that is a folder): nothing was half-written
        """

    static let commands: [String: String] = [
        "sign": SignCommand.help,
        "sync": SyncCommand.help,
        "set-account-token": SyncCommand.setAccountTokenHelp,
        "serve": ServeCommand.help,
        "usage": UsageCommand.help,
        "grant": GrantCommand.help,
        "revoke-grant": RevokeGrantCommand.help,
        "credit": CreditCommand.help,
        "link": LinkCommand.help,
        "consumption": ConsumptionCommand.help,
        "deliver": WebhooksCommand.deliverHelp,
        "webhooks": WebhooksCommand.webhooksHelp,
        "recover": RecoverCommand.help,
        "transaction-info": TransactionInfoCommand.help,
        "refund-history": RefundHistoryCommand.help,
        "lookup-order": LookupOrderCommand.help,
        "finish-transaction": FinishTransactionCommand.help,
        "extend": ExtendCommand.help,
        "test-notification": TestNotificationCommand.help,
        "migrate-receipts": MigrateReceiptsCommand.help,
        "ingest": """
            entitlements ingest [--db PATH] --config PATH [--workers N] [--batch N] [FILE ...]

            Verifies and appends App Store signed data. Each FILE holds one JSON document or
            NDJSON (one per line); `-` or no FILE reads NDJSON from standard input as a
            long-running process: lines are handled as they arrive, each batch of what has
            arrived is committed in one transaction, and its result lines are printed and
            flushed only after the commit, so each output line is an acknowledgment.

            Accepted documents: {"signedPayload": JWS} (notification), {"signedTransactionInfo": JWS},
            {"signedRenewalInfo": JWS}, {"signedAppTransactionInfo": JWS}, a Get Transaction History
            page {"signedTransactions": [...]}, a Get All Subscription Statuses response
            {"data": [{"lastTransactions": [...]}]}, or a bare JWS. Legacy app receipts:
            {"receipt-data": "<base64>"} or a bare base64 line, verified against the Apple Inc. Root;
            a receipt prints one line per original transaction id it holds (kind "receipt", eventId
            the SHA-256 of its bytes). A V1 notification (notification_type, unified_receipt) is not
            signed: it is rejected UNVERIFIABLE_V1, and with appStoreServerAPI configured the original
            transaction id it names is synced (reported on stderr).

            Prints one line per item, each with "input": the 1-based number of the document it came
            from (the line number in NDJSON, blank lines counted; 1 for a file holding one document):
              {"input":1,"result":"appended","kind":"notification","eventId":"...","appTransactionId":"..."}
              {"input":2,"result":"duplicate",...}   {"input":3,"result":"rejected","error":{"code":"...","message":"..."}}
              {"input":4,"result":"empty"}   (a document holding no item, e.g. an empty history page)
            Rejected inputs are kept in the quarantine table. Every FILE is checked before anything
            is ingested: a missing, unreadable or folder FILE is a usage error (exit 2). An input
            holding nothing (0 bytes, or blank lines only) prints no line and says so on stderr.
            Ctrl-C exits 130, saying every line acknowledged before is committed.

            OPTIONS
              --db PATH       database (default entitlements.sqlite)
              --config PATH   configuration file (required)
              --workers N     threads that read and verify batches side by side while the
                              main thread appends the batch before (default 2)
              --batch N       most lines committed in one transaction (default 512); a batch
                              is all that can be read without waiting, up to N lines

            A database written by an earlier version is migrated in place when ingest opens
            it; a migration that rewrites the log reports its progress on standard error.
            """,
        "query": """
            entitlements query [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID | --app-user-id U) [--at TIME] [--pretty]

            Prints what the customer may use at a moment, as one JSON object: entitlements,
            subscriptions (status active, grace_period, billing_retry, expired or revoked),
            other purchases and consumable balances. Unknown ids print {"error":{"code":"NOT_FOUND",...}}
            and exit 1.

            OPTIONS
              --db PATH                      database (default entitlements.sqlite)
              --config PATH                  configuration file (required)
              --app-transaction-id ID        the customer's appTransactionId (or otid:ORIGINAL_ID, which
                                             answers as the appTransactionId it is linked to)
              --original-transaction-id ID   any originalTransactionId of the customer
              --transaction-id ID            any transactionId of the customer
              --app-account-token UUID       every customer whose account token this is, merged
              --app-user-id U                the team's account id: {"appUserId", "at", "entitlements" (the
                                             union over its customers and its grants), "customers": [query
                                             objects], "grants": [...], "balances" (its customers' and its
                                             own credits, summed)}
              --at TIME                      the moment (default: now): ms since 1970 UTC, or ISO 8601
                                             UTC such as 2026-11-23T10:00:00Z
              --pretty                       indent the JSON
            """,
        "history": history,
        "changes": changes,
        "lifecycle": lifecycle,
        "revenue": revenue,
        "metrics": metrics,
        "replay": """
            entitlements replay [--db PATH] --config PATH [--diff] [--reverify] [--check] [--progress | --quiet]

            Rebuilds every projection from the log under the configuration's rules, beside the
            current one, and swaps it in one transaction (a replay killed midway changes
            nothing; events ingested meanwhile are applied before the swap). Those rules become
            the database's active rules: every other command, whatever its configuration,
            answers under them (and warns on stderr when its own rules differ). Prints
            {"events":N,"appTransactionIds":M,"changed":K,"rulesVersion":"..."}.

            The rules are checked against every product in the log: stderr warns of each
            product the data names and the rules do not, and notes each configured product
            no data names, each with the closest name on the other side when it looks like a
            typo ("did you mean ...?"). --check adds the same to the JSON:
            "rulesCheck":{"productsNotInRules":[{"productId":"...","didYouMean":"..."|null}],
            "productsNotInData":[...]}.

            OPTIONS
              --db PATH     database (default entitlements.sqlite)
              --config PATH configuration file (required)
              --diff        also list the customers whose active entitlements (now) change, and
                          those left with no event in the log ("removed": true)
              --reverify    first re-verify every stored JWS against the current trust store
              --check       add "rulesCheck" to the JSON: the rules checked against the data
              --progress    progress on stderr even when it is not a terminal
              --quiet       no progress
            """,
        "verify": """
            entitlements verify --config PATH [FILE ...]

            Checks and decodes without storing: one line per item, {"input":N,"result":"verified",
            "kind":...,"payload":{...}} with nested JWS decoded in place, or the error;
            "input" is the document's number as ingest counts it (for NDJSON its line), and a
            document holding no item prints {"input":N,"result":"empty"}. No database is used.

            OPTIONS
              --config PATH   configuration file (required)
            """,
        "audit": """
            entitlements audit [--db PATH] --config PATH [--expect-head SEQ:HASH] [--progress]

            Recomputes the log's hash chain and re-verifies every stored JWS against the
            trust store; checks that the immutability triggers are the schema's (their SQL)
            and that the log reaches the head recorded beside the database at each commit
            (PATH-head); reports the first event that does not match. Exit 1 if one does.
            Prints headSeq and headHash: record them elsewhere to pin them later. Opens the
            database read-only (works on a read-only copy, as another user, on a full disk);
            a missing database is DATABASE_NOT_FOUND, exit 3. When the log ends before one of
            those heads and is otherwise whole, missingEvents says how many events it lacks
            (deleted, or restored from a replica that never had them: see recover).

            OPTIONS
              --db PATH                database (default entitlements.sqlite)
              --config PATH            configuration file (required)
              --expect-head SEQ:HASH   a head recorded earlier (headSeq:headHash, or the old
                                       machine's PATH-head file): the log must reach it with
                                       that hash, or the newest events were deleted
              --progress               progress on stderr even when it is not a terminal
            """,
        "demo": """
            entitlements demo [--keep DIR] [--serve [--listen HOST:PORT]]

            Ingests the signed sample histories shipped with the program into a fresh database
            in a temporary folder and prints a short account of each customer. Needs no options
            and writes nothing in the working directory.

            OPTIONS
              --keep DIR         keep the demo's database (DIR/demo.sqlite), its configuration
                                 (config.json, test-root.pem) and the samples (histories.ndjson,
                                 tour.json) in DIR, created when missing, and print the commands to
                                 try next; refused when DIR already holds one of those files
              --serve            then serve that database (serve's endpoints and its dashboard),
                                 print the dashboard's address, and serve until Ctrl-C or SIGTERM;
                                 without --keep the temporary folder is removed when it stops
              --listen HOST:PORT a loopback address to serve on (default 127.0.0.1:0, any free port)
            """,
    ]
}
