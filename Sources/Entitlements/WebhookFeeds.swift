import EntitlementCore
internal import EventStore

/// One line of a feed, as it is POSTed: the feed's line with `"feed"` added.
public struct WebhookLine: Sendable, Equatable {
    public var feed: WebhookFeed
    /// The line's cursor in its feed.
    public var cursor: Int64
    /// The `webhook-id` header: `changes:<cursor>`, or the lifecycle event's `id`.
    public var id: String
    /// The request body (compact JSON).
    public var body: [UInt8]
    /// The lifecycle type, for an endpoint's `types` (`nil` for changes).
    public var type: String?
    /// The lifecycle line's environment, for an endpoint's `environments` (`nil` for changes).
    public var environment: AppStoreEnvironment?

    public init(feed: WebhookFeed, cursor: Int64, id: String, body: [UInt8], type: String? = nil, environment: AppStoreEnvironment? = nil) {
        self.feed = feed
        self.cursor = cursor
        self.id = id
        self.body = body
        self.type = type
        self.environment = environment
    }

    /// `line` (a feed's JSON object) with `"feed"` first.
    static func body(feed: WebhookFeed, line: JSONValue) -> [UInt8] {
        guard case .object(let object) = line else { return JSONWriter.bytes(line) }
        return JSONWriter.bytes(.object(JSONObject([("feed", .string(feed.rawValue))] + object.members)))
    }

    /// The line of the changes feed (section 8) for one record.
    public init(change record: ChangeRecord) {
        self.init(feed: .changes, cursor: record.cursor, id: "changes:\(record.cursor)", body: Self.body(feed: .changes, line: record.json()))
    }
}

extension WebhookEndpoint {
    /// Whether `line` goes to this endpoint: its feed is one of `feeds`, and a lifecycle
    /// line passes `types` and `environments` (changes lines go to every endpoint that
    /// names `changes`).
    public func accepts(_ line: WebhookLine) -> Bool {
        guard feeds.contains(line.feed) else { return false }
        switch line.feed {
        case .changes:
            return true
        case .lifecycle:
            if let types, !types.contains(line.type ?? "") { return false }
            if let environments {
                guard let environment = line.environment, environments.contains(environment) else { return false }
            }
            return true
        }
    }
}

/// Where the deliverer reads a feed: on its own connection, never the engine's writer
/// (only what time has made due is recorded first, through the engine, in a short
/// transaction). A feed that is added (lifecycle) is one more conformance, returned by
/// ``WebhookFeedReaders/reader(for:)``.
protocol WebhookFeedReader {
    var feed: WebhookFeed { get }
    /// Records what time has made due, so that the feed is complete as of now.
    func recordDue(engine: Engine, now: Int64) throws(EngineError)
    /// The lines after `cursor`, in order, at most `limit`.
    func lines(after cursor: Int64, limit: Int, store: EventStore) throws(StoreError) -> [WebhookLine]
    /// The last cursor recorded (0 before any line).
    func lastCursor(store: EventStore) throws(StoreError) -> Int64
}

/// The changes feed (section 8).
struct ChangesFeedReader: WebhookFeedReader {
    var feed: WebhookFeed { .changes }

    func recordDue(engine: Engine, now: Int64) throws(EngineError) { try engine.recordDueChanges(now: now) }

    func lines(after cursor: Int64, limit: Int, store: EventStore) throws(StoreError) -> [WebhookLine] {
        try store.changes(after: cursor, limit: limit).map(WebhookLine.init(change:))
    }

    func lastCursor(store: EventStore) throws(StoreError) -> Int64 { try store.lastChangeCursor() }
}

enum WebhookFeedReaders {
    /// The reader of `feed`, or `nil` while this engine cannot read it (the lifecycle
    /// feed until its table exists): an endpoint's lines of that feed then wait, their
    /// position kept, until it can.
    static func reader(for feed: WebhookFeed) -> (any WebhookFeedReader)? {
        switch feed {
        case .changes: return ChangesFeedReader()
        case .lifecycle: return nil
        }
    }
}
