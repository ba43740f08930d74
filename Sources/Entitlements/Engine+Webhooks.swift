import EntitlementCore
internal import EventStore

/// Webhook delivery through the engine (specification section 12): one pass, where each
/// endpoint stands, and sending a feed again from a cursor. ``WebhookDeliverer`` delivers
/// continuously.
extension Engine {
    /// Makes one attempt at every line due now for the configured endpoints (waiting for
    /// the lease while another deliverer holds it), then releases the lease.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func deliverWebhooks(options: WebhookDeliverer.Options = WebhookDeliverer.Options()) throws(EngineError) -> WebhookDeliveryReport {
        let deliverer = try WebhookDeliverer(engine: self, options: options)
        defer { deliverer.release() }
        return try deliverer.deliverDue()
    }

    /// Where each configured endpoint stands in each of its feeds.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func webhookStatus() throws(EngineError) -> [WebhookStatus] {
        do {
            return try readers.withReader { store throws(StoreError) in
                var statuses: [WebhookStatus] = []
                for endpoint in configuration.webhooks {
                    var own: [WebhookStatus] = []
                    for feed in endpoint.feeds {
                        let position = try store.webhookPosition(endpoint: endpoint.url.absoluteString, feed: feed.rawValue)
                        let last = try WebhookFeedReaders.reader(for: feed).lastCursor(store: store)
                        own.append(WebhookStatus(position: position, feed: feed, lastCursor: last))
                    }
                    // A failing line holds its whole endpoint: the other feed waits for it.
                    if let failing = own.first(where: { $0.failingCursor != nil }) {
                        for index in own.indices where own[index].feed != failing.feed { own[index].waitingFor = failing.feed }
                    }
                    statuses += own
                }
                return statuses
            }
        } catch {
            throw EngineError(error)
        }
    }

    /// Sends `feed` to the endpoint at `url` again from after `cursor` (its failing line,
    /// if any, is forgotten): the deliverer takes it from there.
    /// - Parameter feed: the feed; `nil`: the endpoint's one feed, or the lifecycle feed
    ///   of an endpoint sent both.
    /// - Returns: the feed sent again.
    /// - Throws: ``EngineError`` (`CONFIGURATION`) when no configured endpoint has that
    ///   URL and feed, or the cursor is from the future; a database code when it cannot be written.
    @discardableResult
    public func redeliverWebhooks(url: String, feed: WebhookFeed? = nil, since cursor: Int64) throws(EngineError) -> WebhookFeed {
        guard let endpoint = configuration.webhooks.first(where: { $0.url.absoluteString == url }) else {
            let known = configuration.webhooks.map(\.url.absoluteString)
            throw EngineError(
                code: .configuration,
                message: "no webhook endpoint has the URL \(url) (configured: \(known.isEmpty ? "none" : known.joined(separator: ", ")))")
        }
        let feed = feed ?? (endpoint.feeds.count == 1 ? endpoint.feeds[0] : .lifecycle)
        guard endpoint.feeds.contains(feed) else {
            throw EngineError(code: .configuration, message: "the endpoint \(url) does not take the \(feed.rawValue) feed (its feeds: \(endpoint.feeds.map(\.rawValue).joined(separator: ", ")))")
        }
        guard cursor >= 0 else { throw EngineError(code: .configuration, message: "the cursor must be 0 or more") }
        do {
            let reader = WebhookFeedReaders.reader(for: feed)
            let last = try readers.withReader { store throws(StoreError) in try reader.lastCursor(store: store) }
            guard cursor <= last else {
                throw EngineError(code: .configuration, message: "--since \(cursor) is from the future: the last \(feed.rawValue) cursor recorded is \(last)")
            }
            try store.withLock { store throws(StoreError) in
                var position = try store.webhookPosition(endpoint: url, feed: feed.rawValue)
                position.deliveredCursor = cursor
                position.failingCursor = nil
                position.failingSince = nil
                position.attempts = 0
                position.nextAttemptAt = nil
                position.lastError = nil
                try store.saveWebhookPosition(position, at: Self.now())
            }
            return feed
        } catch let error as EngineError {
            throw error
        } catch let error as StoreError {
            throw EngineError(error)
        } catch {
            throw EngineError(code: .configuration, message: "\(error)")
        }
    }

    /// One pass of webhook delivery, on a thread of its own (it waits on the network).
    public func deliverWebhooks(options: WebhookDeliverer.Options = WebhookDeliverer.Options()) async throws(EngineError) -> WebhookDeliveryReport {
        try await onOwnThread("entitlements.webhooks") { () throws(EngineError) in try self.deliverWebhooks(options: options) }
    }

    /// Where each configured endpoint stands, on the engine's threads.
    public func webhookStatus() async throws(EngineError) -> [WebhookStatus] {
        try await onEngineThread { () throws(EngineError) in try self.webhookStatus() }
    }

    /// Sends a feed again from a cursor, on the engine's threads.
    @discardableResult
    public func redeliverWebhooks(url: String, feed: WebhookFeed? = nil, since cursor: Int64) async throws(EngineError) -> WebhookFeed {
        try await onEngineThread { () throws(EngineError) in try self.redeliverWebhooks(url: url, feed: feed, since: cursor) }
    }
}

/// Where one endpoint stands in one feed (`entitlements webhooks status`).
public struct WebhookStatus: Sendable, Equatable {
    public var url: String
    public var feed: WebhookFeed
    /// Every line at or below it was delivered or marked failed.
    public var deliveredCursor: Int64
    /// The feed's last cursor.
    public var lastCursor: Int64
    /// The line being retried, its first attempt, failed attempts so far, the next, and why the last failed.
    public var failingCursor: Int64?
    public var failingSince: Int64?
    public var attempts: Int
    public var nextAttemptAt: Int64?
    public var lastError: String?
    /// Lines given up on.
    public var failedLines: Int
    /// The endpoint's other feed, when a line of it is being retried: this feed's lines wait
    /// for it (a failing line holds its whole endpoint); `nil` otherwise.
    public var waitingFor: WebhookFeed? = nil

    /// Lines recorded after the delivered cursor (some may be filtered out by `types` or `environments`).
    public var lag: Int64 { max(0, lastCursor - deliveredCursor) }

    init(position: WebhookPosition, feed: WebhookFeed, lastCursor: Int64) {
        url = position.endpoint
        self.feed = feed
        deliveredCursor = position.deliveredCursor
        self.lastCursor = lastCursor
        failingCursor = position.failingCursor
        failingSince = position.failingSince
        attempts = position.attempts
        nextAttemptAt = position.nextAttemptAt
        lastError = position.lastError
        failedLines = position.failedLines
    }

    private func number(_ value: Int64?) -> JSONValue { value.map(JSONValue.int) ?? .null }

    /// The line `webhooks status` prints.
    public func json() -> JSONValue {
        .object(
            JSONObject([
                ("url", .string(url)), ("feed", .string(feed.rawValue)), ("deliveredCursor", .int(deliveredCursor)),
                ("lastCursor", number(lastCursor)), ("lag", number(lag)), ("failingCursor", number(failingCursor)),
                ("failingSince", number(failingSince)), ("attempts", .int(Int64(attempts))), ("nextAttemptAt", number(nextAttemptAt)),
                ("lastError", lastError.map(JSONValue.string) ?? .null), ("failedLines", .int(Int64(failedLines))),
                ("waitingFor", waitingFor.map { .string($0.rawValue) } ?? .null),
            ]))
    }
}
