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

    /// The line of the lifecycle feed (section 12) for one record: its `id` is the event's.
    public init(lifecycle record: LifecycleRecord) {
        var environment: AppStoreEnvironment? = nil
        if case .string(let name)? = record.fields["environment"] { environment = AppStoreEnvironment(rawValue: name) }
        self.init(
            feed: .lifecycle, cursor: record.cursor, id: record.id, body: Self.body(feed: .lifecycle, line: record.json()),
            type: record.type.rawValue, environment: environment)
    }
}

extension WebhookEndpoint {
    /// Whether `line` goes to this endpoint: its feed is one of `feeds`, and a lifecycle
    /// line passes `types` and `environments` (changes lines go to every endpoint that
    /// names `changes`). A line of no App Store environment (a grant or transfer of an app
    /// user who has no App Store data) is not one `environments` filters out.
    public func accepts(_ line: WebhookLine) -> Bool {
        guard feeds.contains(line.feed) else { return false }
        switch line.feed {
        case .changes:
            return true
        case .lifecycle:
            if let types, !types.contains(line.type ?? "") { return false }
            if let environments, let environment = line.environment, !environments.contains(environment) { return false }
            return true
        }
    }
}

/// Where the deliverer reads a feed: on its own connection, never the engine's writer
/// (only what time has made due is recorded first, through the engine, in a short
/// transaction). Each feed is one conformance, returned by ``WebhookFeedReaders/reader(for:)``.
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

/// The lifecycle feed (section 12).
struct LifecycleFeedReader: WebhookFeedReader {
    var feed: WebhookFeed { .lifecycle }

    func recordDue(engine: Engine, now: Int64) throws(EngineError) { _ = try engine.recordDueLifecycle(now: now) }

    func lines(after cursor: Int64, limit: Int, store: EventStore) throws(StoreError) -> [WebhookLine] {
        try store.lifecycle(after: cursor, limit: limit).map(WebhookLine.init(lifecycle:))
    }

    func lastCursor(store: EventStore) throws(StoreError) -> Int64 { try store.lastLifecycleCursor() }
}

enum WebhookFeedReaders {
    /// The reader of `feed`.
    static func reader(for feed: WebhookFeed) -> any WebhookFeedReader {
        switch feed {
        case .changes: return ChangesFeedReader()
        case .lifecycle: return LifecycleFeedReader()
        }
    }
}
