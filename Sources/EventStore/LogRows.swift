import EntitlementCore

/// One row of the log as written: what identifies and files the event, how its
/// input is kept (in parts, or whole), and its place in the hash chain.
struct LogRow {
    /// How the input is kept.
    enum Content {
        /// A JWS in parts (``StoredJWS``).
        case parts(StoredJWS)
        /// The input exactly as received (a usage record, or a JWS that does not
        /// split), with its decoded payload when there is one, for people reading
        /// the database.
        case whole(raw: String, body: [UInt8]?)
    }

    var seq: Int64
    var identity: String
    var kind: String
    var customerKey: String?
    /// The columns that file it for look-ups.
    var filing: LogFiling
    var receivedAt: Int64
    var content: Content
    var prevHash: [UInt8]
    var hash: [UInt8]

    /// How a JWS is kept: in parts when they give it back, else whole.
    static func content(of input: VerifiedInput) -> Content {
        if let stored = StoredJWS(input) { return .parts(stored) }
        return .whole(raw: input.jws, body: nil)
    }
}

/// The columns that file an event for look-ups (`query --transaction-id`, the history,
/// `recover`'s start). A signed event's are each read from what was signed, and the audit
/// holds every row to them; the event's customer is checked apart, and `received_at` is
/// the engine's own.
struct LogFiling: Equatable {
    var eventId: String
    var appTransactionId: String?
    var originalTransactionId: String?
    var transactionId: String? = nil
    var notificationType: String? = nil
    var subtype: String? = nil
    var signedDate: Int64
}

extension LogFiling {
    /// What `event`, made of the signed `input`, is filed under.
    init(event: Event, input: VerifiedInput, eventId: String) {
        let key = event.customerKey
        self.eventId = eventId
        appTransactionId = key.flatMap { $0.hasPrefix("otid:") ? nil : $0 }
        originalTransactionId = event.originalTransactionId
        transactionId = event.transactionId
        if case .notification(let n) = input {
            notificationType = n.payload.notificationType.rawValue
            subtype = n.payload.subtype?.rawValue
        }
        signedDate = event.signedDate
    }

    /// What a row says, from `statement`'s columns `event_id, app_transaction_id,
    /// original_transaction_id, transaction_id, notification_type, subtype, signed_date`
    /// starting at `column`.
    init(_ statement: Statement, column: Int32) {
        eventId = statement.string(column) ?? ""
        appTransactionId = statement.string(column + 1)
        originalTransactionId = statement.string(column + 2)
        transactionId = statement.string(column + 3)
        notificationType = statement.string(column + 4)
        subtype = statement.string(column + 5)
        signedDate = statement.int64(column + 6)
    }

    /// The first column whose value differs from `other`'s, `nil` when none does.
    func firstDifference(from other: LogFiling) -> String? {
        if eventId != other.eventId { return "event_id" }
        if appTransactionId != other.appTransactionId { return "app_transaction_id" }
        if originalTransactionId != other.originalTransactionId { return "original_transaction_id" }
        if transactionId != other.transactionId { return "transaction_id" }
        if notificationType != other.notificationType { return "notification_type" }
        if subtype != other.subtype { return "subtype" }
        if signedDate != other.signedDate { return "signed_date" }
        return nil
    }
}

extension EventStore {
    /// Inserts `row` into `table` (`events`, or the migration's new table), its
    /// nested JWS into `jws_nested` and any new header into `jws_headers`, in the
    /// caller's transaction; signatures and paths in `form` (see ``LogColumns``).
    static func insert(
        _ row: LogRow, into table: String, on connection: Connection, headers: JWSHeaders, form: LogColumns.Form
    ) throws {
        let insert = try connection.cached(table == "events" ? insertIntoEvents : insertSQL(into: table))
        try insert.bind(1, row.seq)
        try insert.bind(2, row.identity)
        try insert.bind(3, row.kind)
        try insert.bind(4, row.filing.eventId)
        try insert.bind(5, row.customerKey)
        try insert.bind(6, row.filing.appTransactionId)
        try insert.bind(7, row.filing.originalTransactionId)
        try insert.bind(8, row.filing.transactionId)
        try insert.bind(9, row.filing.notificationType)
        try insert.bind(10, row.filing.subtype)
        try insert.bind(11, row.filing.signedDate)
        try insert.bind(12, row.receivedAt)
        switch row.content {
        case .parts(let stored):
            try insert.bind(13, try headers.id(of: stored.header, on: connection))
            try insert.bind(14, text: stored.body)
            try LogColumns.bindSignature(insert, 15, stored.signature, form: form)
            try insert.bind(16, nil as String?)
        case .whole(let raw, let body):
            try insert.bind(13, nil as Int64?)
            try insert.bind(14, text: body)
            try insert.bind(15, nil as String?)
            try insert.bind(16, raw)
        }
        try insert.bind(17, blob: row.prevHash)
        try insert.bind(18, blob: row.hash)
        try insert.step()
        guard case .parts(let stored) = row.content, !stored.nested.isEmpty else { return }
        let nested = try connection.cached(
            "INSERT INTO jws_nested (event_seq, position, path, header_id, payload, signature) VALUES (?, ?, ?, ?, ?, ?)")
        for item in stored.nested {
            nested.reset()
            try nested.bind(1, row.seq)
            try nested.bind(2, Int64(item.position))
            try LogColumns.bindPath(nested, 3, item.path, form: form)
            try nested.bind(4, try headers.id(of: item.jws.header, on: connection))
            try nested.bind(5, text: item.jws.payload)
            try LogColumns.bindSignature(nested, 6, item.jws.signature, form: form)
            try nested.step()
        }
    }

    /// The statement that inserts a log row into `table`.
    private static func insertSQL(into table: String) -> String {
        """
        INSERT INTO \(table) (seq, identity, kind, event_id, customer_key, app_transaction_id, original_transaction_id,
            transaction_id, notification_type, subtype, signed_date, received_at, header_id, body, signature, raw,
            prev_hash, hash)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    }

    /// ``insertSQL(into:)`` of `events`, made once: one text, found by its address.
    private static let insertIntoEvents = insertSQL(into: "events")

    /// The input logged at `seq` exactly as received (a JWS byte for byte, or a
    /// usage record's JSON), from the columns `header_id, body, signature, raw` of
    /// `statement` starting at `column`, and its nested JWS.
    func loggedInput(seq: Int64, kind: String?, _ statement: Statement, column: Int32) throws -> String {
        if let raw = statement.string(column + 3) { return raw }
        guard let headerId = statement.optionalInt64(column), let body = statement.textBytes(column + 1),
            let signature = LogColumns.signature(statement, column + 2)
        else {
            throw StoreError(code: .unreadable, message: "event \(seq) has neither a raw input nor a JWS header, body and signature")
        }
        let stored = StoredJWS(
            header: try jwsHeaders.header(headerId, on: connection), signature: signature, body: body,
            nested: kind == SignedKind.notification.rawValue ? try nestedJWS(of: seq) : [])
        return stored.jws
    }

    /// The JWS nested in the notification logged at `seq`, by position.
    func nestedJWS(of seq: Int64) throws -> [StoredJWS.Nested] {
        let statement = try connection.cached(
            "SELECT position, path, header_id, payload, signature FROM jws_nested WHERE event_seq = ? ORDER BY position")
        defer { statement.reset() }
        try statement.bind(1, seq)
        var nested: [StoredJWS.Nested] = []
        while try statement.step() {
            nested.append(StoredJWS.Nested(
                position: Int(statement.int64(0)), path: LogColumns.path(statement, 1),
                jws: StoredJWS.Parts(
                    header: try jwsHeaders.header(statement.int64(2), on: connection),
                    payload: statement.textBytes(3) ?? [], signature: LogColumns.signature(statement, 4) ?? "")))
        }
        return nested
    }

    /// The input logged at `seq` exactly as received: the JWS byte for byte (given
    /// back from the parts the log keeps), or a usage record's canonical JSON.
    /// - Throws: ``StoreError`` `unreadable` when there is no event at `seq`.
    public func loggedInput(at seq: Int64) throws(StoreError) -> String {
        try mapped { try loggedInput(seq: seq) }
    }

    /// Throws `DATABASE_NOT_MIGRATED` when the log is still in the form an earlier
    /// engine wrote (each JWS whole): a reader does not migrate, a writer does on open.
    func requireLogInParts() throws {
        let statement = try connection.cached("SELECT count(*) FROM pragma_table_info('events') WHERE name = 'body'")
        defer { statement.reset() }
        guard try statement.step(), statement.int64(0) == 0 else { return }
        throw StoreError(
            code: .notMigrated,
            message: "the database \(path) was written by an earlier version of the engine and is not migrated yet (migration 012_compact_log stores the log in parts); a command that writes (ingest, replay, usage, serve, sync) migrates it in place when it opens it: run one once, then this again")
    }

    /// The input logged at `seq` exactly as received.
    func loggedInput(seq: Int64) throws -> String {
        try requireLogInParts()
        let statement = try connection.cached("SELECT kind, header_id, body, signature, raw FROM events WHERE seq = ?")
        defer { statement.reset() }
        try statement.bind(1, seq)
        guard try statement.step() else {
            throw StoreError(code: .unreadable, message: "event \(seq) is missing from the log")
        }
        return try loggedInput(seq: seq, kind: statement.string(0), statement, column: 1)
    }
}
