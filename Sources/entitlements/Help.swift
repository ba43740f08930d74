/// The help texts: `entitlements --help` and `entitlements COMMAND --help`.
enum Help {
    static let overview = """
        entitlements — an event-sourced entitlement engine for App Store in-app purchases.

        It verifies the data Apple signs (App Store Server Notifications V2, signed
        transactions, renewal info, app transactions) against Apple's root, appends what
        it verified to an immutable SQLite log, and answers what each customer
        (appTransactionId) may use at any moment.

        USAGE
          entitlements ingest  [--db PATH] --config PATH [--workers N] [FILE ...]
          entitlements query   [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID) [--at MS]
          entitlements replay  [--db PATH] --config PATH [--diff] [--reverify] [--progress]
          entitlements verify  --config PATH [FILE ...]
          entitlements audit   [--db PATH] --config PATH
          entitlements sign    --config PATH (api-token | promotional-offer ... | intro-offer-eligibility ... | promotional-offer-v1 ...)
          entitlements sync    [--db PATH] --config PATH (--notifications [--start MS] [--only-failures] | --customer ID)
          entitlements set-account-token [--db PATH] --config PATH --original-transaction-id ID --app-account-token UUID
          entitlements demo

        Run `entitlements COMMAND --help` for a command's options.

        COMMON OPTIONS
          --db PATH       the SQLite database (default: entitlements.sqlite in the working directory)
          --config PATH   the JSON configuration: bundleId, appAppleId, environment, rootCertificates, rules

        EXIT CODES
          0  success; 1  something was rejected or not found; 2  usage or configuration error;
          3  the database could not be used (read-only, full, corrupt): nothing was half-written
        """

    static let commands: [String: String] = [
        "sign": SignCommand.help,
        "sync": SyncCommand.help,
        "set-account-token": SyncCommand.setAccountTokenHelp,
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
            {"data": [{"lastTransactions": [...]}]}, or a bare JWS.

            Prints one line per item:
              {"result":"appended","kind":"notification","eventId":"...","appTransactionId":"..."}
              {"result":"duplicate",...}   {"result":"rejected","error":{"code":"...","message":"..."}}
            Rejected inputs are kept in the quarantine table.

            OPTIONS
              --db PATH       database (default entitlements.sqlite)
              --config PATH   configuration file (required)
              --workers N     threads verifying signatures in parallel (default 2)
              --batch N       most lines committed in one transaction (default 512)
            """,
        "query": """
            entitlements query [--db PATH] --config PATH (--app-transaction-id ID | --original-transaction-id ID | --transaction-id ID | --app-account-token UUID) [--at MS]

            Prints what the customer may use at a moment, as one JSON object: entitlements,
            subscriptions (status active, grace_period, billing_retry, expired or revoked),
            other purchases and consumable balances. Unknown ids print {"error":{"code":"NOT_FOUND",...}}
            and exit 1.

            OPTIONS
              --app-transaction-id ID        the customer's appTransactionId (or otid:ORIGINAL_ID, which
                                             answers as the appTransactionId it is linked to)
              --original-transaction-id ID   any originalTransactionId of the customer
              --transaction-id ID            any transactionId of the customer
              --app-account-token UUID       every customer whose data carried this token, merged
              --at MS                        the moment, in ms since 1970 UTC (default: now)
              --pretty                       indent the JSON
            """,
        "replay": """
            entitlements replay [--db PATH] --config PATH [--diff] [--reverify] [--progress | --quiet]

            Rebuilds every projection from the log under the configuration's rules, beside the
            current one, and swaps it in one transaction (a replay killed midway changes
            nothing; events ingested meanwhile are applied before the swap). Prints
            {"events":N,"appTransactionIds":M,"changed":K,"rulesVersion":"..."}.

            OPTIONS
              --diff        also list the customers whose active entitlements (now) change
              --reverify    first re-verify every stored JWS against the current trust store
              --progress    progress on stderr even when it is not a terminal
              --quiet       no progress
            """,
        "verify": """
            entitlements verify --config PATH [FILE ...]

            Checks and decodes without storing: one line per item, {"result":"verified",
            "kind":...,"payload":{...}} with nested JWS decoded in place, or the error.
            """,
        "audit": """
            entitlements audit [--db PATH] --config PATH

            Recomputes the log's hash chain and re-verifies every stored JWS against the
            trust store; reports the first event that does not match. Exit 1 if one does.
            """,
        "demo": """
            entitlements demo

            Ingests the signed sample histories shipped with the program into a fresh database
            in a temporary folder and prints a short account of each customer. Needs no options
            and writes nothing in the working directory.
            """,
    ]
}
