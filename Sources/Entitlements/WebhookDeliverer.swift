import AppStoreVerification
import EntitlementCore
internal import EventStore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pushes the feeds to the configured webhook endpoints (specification section 12): at least
/// once, in feed order per endpoint and feed, each line POSTed and signed (Standard
/// Webhooks), a failing line retried on the endpoint's schedule while the endpoint's later
/// lines wait (those of its other feed too), and given up on (marked failed) 24 hours after
/// its first attempt.
///
/// Where each endpoint stands is written to the database after every attempt, so a
/// deliverer that is stopped, or killed, resumes where it was: a line may be delivered
/// twice, never skipped. One deliverer works on a database at a time: it holds a lease in
/// the database, renewed while it delivers, and another waits for it.
///
/// It works on a thread and a database connection of its own, and never holds a write
/// lock while it waits on the network: a slow receiver stalls neither ingest nor queries.
///
/// ```swift
/// let deliverer = try WebhookDeliverer(engine: engine)
/// deliverer.start()          // delivers until stopped
/// ...
/// deliverer.stop()
/// ```
public final class WebhookDeliverer: @unchecked Sendable {
    public struct Options: Sendable {
        /// Seconds a receiver has to answer 2xx, the whole exchange included.
        public var requestTimeout: Double = 10
        /// The most of a response read, head and body: its status counts, the rest is not read.
        public var maximumResponseBytes = 64 << 10
        /// How long the lease lasts unless renewed (ms); it is renewed a third of the way through.
        public var leaseDuration: Int64 = 30_000
        /// How often new lines are looked for, and a held lease asked for again (ms).
        public var pollInterval: Int64 = 250
        /// Lines read from a feed at a time.
        public var batch = 100
        /// A PEM file of CA certificates to trust instead of the system's (tests, private CAs).
        public var trustedCertificatesFile: String? = nil
        /// Now, in milliseconds since 1970, for the schedule and the lease (tests move it);
        /// the `webhook-timestamp` header always reads the wall clock.
        public var clock: @Sendable () -> Int64 = { Engine.now() }
        /// Called after every attempt (on the deliverer's thread).
        public var onAttempt: (@Sendable (WebhookAttempt) -> Void)? = nil

        public init() {}
    }

    public let engine: Engine
    public let endpoints: [WebhookEndpoint]
    public let options: Options
    /// Who this deliverer is in the lease: host, process, and a random part.
    public let holder: String

    /// The connection that holds the lease (under `leaseLock`).
    private let leaseStore: EventStore
    private let leaseLock = NSLock()
    /// Until when the lease is ours, as last taken or renewed (under `leaseLock`).
    private var leaseUntil: Int64? = nil
    /// One connection per endpoint, each used under its lock: a slow endpoint holds up no other.
    private let endpointStores: [EventStore]
    /// How the deliverer's connections wait for other processes' locks (abandoned by ``stop()``).
    private let busyWaits: [BusyWait]
    private let endpointLocks: [NSLock]
    private let client: HTTPClient
    private let condition = NSCondition()
    private var stopping = false
    private var running = false
    private var threadsRunning = 0

    /// Opens the deliverer's database connections (one for the lease, one per endpoint).
    /// - Parameters:
    ///   - engine: The engine whose database holds the feeds and the positions.
    ///   - endpoints: Where to deliver; default, the engine's configured ones.
    ///   - options: Timeouts, the lease, how often to look for new lines.
    /// - Throws: ``EngineError`` when the database or the trust store cannot be opened.
    public init(engine: Engine, endpoints: [WebhookEndpoint]? = nil, options: Options = Options()) throws(EngineError) {
        self.engine = engine
        let endpoints = endpoints ?? engine.configuration.webhooks
        self.endpoints = endpoints
        self.options = options
        holder = "\(Self.hostName()) \(getpid()) \(UUID().uuidString.prefix(8).lowercased())"
        func open() throws(StoreError) -> EventStore {
            try EventStore(
                path: engine.databasePath, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) }, mode: .existing,
                busyTimeoutMilliseconds: engine.configuration.storeBusyTimeout)
        }
        do {
            leaseStore = try open()
            var stores: [EventStore] = []
            for _ in endpoints { stores.append(try open()) }
            endpointStores = stores
            busyWaits = [leaseStore.busyWait] + stores.map(\.busyWait)
        } catch {
            throw EngineError(error)
        }
        endpointLocks = endpoints.map { _ in NSLock() }
        var http = HTTPClient.Options()
        http.timeout = options.requestTimeout
        http.maximumResponseBytes = options.maximumResponseBytes
        http.headOnlyPastLimit = true
        http.trustedCertificatesFile = options.trustedCertificatesFile
        do { client = try HTTPClient(options: http) } catch {
            throw EngineError(code: .configuration, message: "webhooks: \(error.description)")
        }
    }

    deinit { try? leaseStore.releaseWebhookLease(holder: holder) }

    // MARK: Passes

    /// Waits for the lease (another deliverer of the database goes first), then makes one
    /// attempt at every line due now, endpoint by endpoint: each goes on through its
    /// lines until one fails (that one waits for its retry); a retry not yet due is left
    /// for later. Keeps the lease (released by ``stop()`` or ``release()``).
    /// - Returns: What was attempted, delivered and failed.
    /// - Throws: ``EngineError`` when the database cannot be used.
    public func deliverDue() throws(EngineError) -> WebhookDeliveryReport {
        while true {
            if try ensureLease() { break }
            if waitForStop(milliseconds: options.pollInterval) { return WebhookDeliveryReport() }
        }
        try recordDue()
        var report = WebhookDeliveryReport()
        for index in endpoints.indices {
            if isStopping { break }
            try deliver(endpoint: index, report: &report)
        }
        return report
    }

    /// Gives the lease up (another deliverer may start at once).
    public func release() {
        leaseLock.lock()
        defer { leaseLock.unlock() }
        try? leaseStore.releaseWebhookLease(holder: holder)
        leaseUntil = nil
    }

    /// Records what time has made due in each feed an endpoint takes, so that the feeds are complete as of now.
    private func recordDue() throws(EngineError) {
        let now = options.clock()
        var recorded = Set<WebhookFeed>()
        for endpoint in endpoints {
            for feed in endpoint.feeds where recorded.insert(feed).inserted {
                try WebhookFeedReaders.reader(for: feed).recordDue(engine: engine, now: now)
            }
        }
    }

    /// Goes through the endpoint's feeds, on its own connection. A line being retried holds
    /// the whole endpoint: its feed goes first, and the endpoint's other feeds wait until
    /// that line is delivered or marked failed.
    private func deliver(endpoint index: Int, report: inout WebhookDeliveryReport) throws(EngineError) {
        endpointLocks[index].lock()
        defer { endpointLocks[index].unlock() }
        let endpoint = endpoints[index]
        let store = endpointStores[index]
        var positions: [(feed: WebhookFeed, position: WebhookPosition)] = []
        do {
            for feed in endpoint.feeds {
                positions.append((feed, try store.webhookPosition(endpoint: endpoint.url.absoluteString, feed: feed.rawValue)))
            }
        } catch {
            throw EngineError(error)
        }
        if let failing = positions.firstIndex(where: { $0.position.failingCursor != nil }) {
            positions.insert(positions.remove(at: failing), at: 0)
        }
        for (feed, position) in positions {
            if isStopping { return }
            let held = try deliver(
                endpoint: endpoint, reader: WebhookFeedReaders.reader(for: feed), from: position, store: store, report: &report)
            if held { return }
        }
    }

    /// Goes through `endpoint`'s lines of one feed from `position` (as stored when this pass
    /// began) until one fails, nothing is left, or the lease is lost; whether a line of the
    /// feed is left failing (waiting for its retry).
    private func deliver(
        endpoint: WebhookEndpoint, reader: any WebhookFeedReader, from position: WebhookPosition, store: EventStore,
        report: inout WebhookDeliveryReport
    ) throws(EngineError) -> Bool {
        let name = endpoint.url.absoluteString
        var position = position
        do {
            if let next = position.nextAttemptAt, next > options.clock() { return true }
            // What is stored, as last read or written here: a position moved meanwhile by a
            // redelivery is not overwritten (this pass ends, and the next reads it).
            var stored = position
            var skipped = false
            defer {
                if skipped { _ = try? store.saveWebhookPosition(position, expected: stored, at: options.clock()) }
            }
            while !isStopping {
                let lines = try reader.lines(after: position.deliveredCursor, limit: options.batch, store: store)
                if lines.isEmpty { return false }
                for line in lines {
                    guard endpoint.accepts(line) else {
                        position.deliveredCursor = line.cursor
                        skipped = true
                        continue
                    }
                    // Never deliver without the lease: renew it (or find it lost) first.
                    guard try ensureLease() else { return position.failingCursor != nil }
                    let start = options.clock()
                    // The header's timestamp is the wall clock's, whatever clock schedules retries.
                    let outcome = send(line, to: endpoint, timestamp: Engine.now() / 1000)
                    let now = options.clock()
                    report.attempts += 1
                    let failed: WebhookFailedLine?
                    switch outcome {
                    case .delivered:
                        report.delivered += 1
                        position.recordDelivery(of: line)
                        failed = nil
                    case .failed(let reason):
                        report.failedAttempts += 1
                        failed = position.recordFailure(of: line, reason: reason, startedAt: start, at: now, schedule: endpoint.retrySchedule)
                        if failed != nil { report.markedFailed += 1 }
                    }
                    skipped = false
                    let saved = try store.saveWebhookPosition(position, failedLine: failed, expected: stored, at: now)
                    options.onAttempt?(WebhookAttempt(url: name, line: line, outcome: outcome, at: now, markedFailed: failed != nil))
                    guard saved else { return true }
                    stored = position
                    if case .failed = outcome, failed == nil { return true }
                    if isStopping { return position.failingCursor != nil }
                }
            }
            return position.failingCursor != nil
        } catch let error as EngineError {
            throw error
        } catch let error as StoreError {
            throw EngineError(error)
        } catch {
            throw EngineError(code: "DATABASE_ERROR", message: "\(error)")
        }
    }

    /// One POST of `line`: a 2xx within the timeout is a delivery; anything else
    /// (another status, a redirect, which is not followed, a timeout, a reset) is not.
    func send(_ line: WebhookLine, to endpoint: WebhookEndpoint, timestamp: Int64) -> WebhookAttempt.Outcome {
        var headers = endpoint.signer.headers(id: line.id, timestamp: timestamp, body: line.body)
        headers.append(("Content-Type", "application/json"))
        headers.append(("User-Agent", "entitlements/\(Engine.version)"))
        let request = HTTPRequest(method: "POST", url: endpoint.url, headers: headers, body: line.body)
        do {
            let response = try client.send(request)
            if (200..<300).contains(response.status) { return .delivered(status: response.status) }
            return .failed("HTTP \(response.status)")
        } catch {
            return .failed(error.description)
        }
    }

    // MARK: Running on threads of its own

    /// Delivers until ``stop()``, on threads of its own: one per endpoint (a slow receiver
    /// holds up no other endpoint), each passing over its feeds every
    /// ``Options/pollInterval`` while this deliverer holds the lease, and one that takes and
    /// renews the lease and records what time has made due.
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard !running else { return }
        running = true
        stopping = false
        threadsRunning = endpoints.count + 1
        spawn("entitlements.webhooks") { [self] in
            while !isStopping {
                do throws(EngineError) {
                    if try ensureLease() { try recordDue() }
                } catch {
                    complain(error)
                }
                if waitForStop(milliseconds: options.pollInterval) { break }
            }
        }
        for index in endpoints.indices {
            spawn("entitlements.webhooks.\(index)") { [self] in
                while !isStopping {
                    if hasLease {
                        var report = WebhookDeliveryReport()
                        do throws(EngineError) { try deliver(endpoint: index, report: &report) } catch { complain(error) }
                    }
                    if waitForStop(milliseconds: options.pollInterval) { break }
                }
            }
        }
    }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        WorkerThread.detach(name: name) { [self] in
            body()
            condition.lock()
            threadsRunning -= 1
            condition.broadcast()
            condition.unlock()
        }
    }

    /// A database failure (busy, full): said, and tried again at the next poll.
    private func complain(_ error: any Error) {
        FileHandle.standardError.write(Data("entitlements: webhooks: \(error)\n".utf8))
    }

    /// Stops delivering: the attempts in flight end (within the request timeout), the
    /// positions are saved, the lease released; returns once the threads have ended.
    public func stop() {
        // A thread waiting for another process's lock would hold the stop for a busy timeout:
        // its wait ends now (its write is tried again on the next start).
        busyWaits.forEach { $0.abandon() }
        defer { busyWaits.forEach { $0.resume() } }
        condition.lock()
        stopping = true
        condition.broadcast()
        while threadsRunning > 0 { condition.wait() }
        running = false
        condition.unlock()
        release()
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    /// Waits up to `milliseconds`; whether the deliverer is stopping.
    private func waitForStop(milliseconds: Int64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let until = Date(timeIntervalSinceNow: Double(milliseconds) / 1000)
        while !stopping {
            if !condition.wait(until: until) { break }
        }
        return stopping
    }

    // MARK: The lease

    /// Whether the lease was ours when last taken or renewed, and has not run out since.
    private var hasLease: Bool {
        leaseLock.lock()
        defer { leaseLock.unlock() }
        return leaseUntil.map { $0 > options.clock() } ?? false
    }

    /// Takes the lease, or renews it once a third of it has passed; whether it is ours.
    /// Called before every attempt, so an attempt always begins with two thirds of the
    /// lease ahead of it (longer than the request timeout, by default).
    private func ensureLease() throws(EngineError) -> Bool {
        leaseLock.lock()
        defer { leaseLock.unlock() }
        let now = options.clock()
        if let until = leaseUntil, until - now > options.leaseDuration * 2 / 3 { return true }
        do {
            let held = try leaseStore.acquireWebhookLease(holder: holder, now: now, duration: options.leaseDuration, isGone: Self.isGone)
            leaseUntil = held ? now + options.leaseDuration : nil
            return held
        } catch {
            leaseUntil = nil
            throw EngineError(error)
        }
    }

    /// Whether the lease's `holder` is a process of this host that has ended (killed or
    /// crashed before it released the lease): its lease is taken over at once.
    static func isGone(_ holder: String) -> Bool {
        let parts = holder.split(separator: " ")
        guard parts.count == 3, String(parts[0]) == hostName(), let pid = Int32(parts[1]), pid > 0 else { return false }
        if pid == getpid() { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: " ", with: "_")
        return name.isEmpty ? "localhost" : name
    }
}

/// What one pass did.
public struct WebhookDeliveryReport: Sendable, Equatable {
    /// POSTs made.
    public var attempts = 0
    /// Of them, answered 2xx.
    public var delivered = 0
    /// Of them, not (retried later, or marked failed).
    public var failedAttempts = 0
    /// Lines given up on (24 hours after their first attempt).
    public var markedFailed = 0
    /// Whether every attempt succeeded (`deliver --once` exits 0).
    public var allSucceeded: Bool { failedAttempts == 0 }

    public init() {}
}

/// One attempt at one line (``WebhookDeliverer/Options/onAttempt``).
public struct WebhookAttempt: Sendable {
    public enum Outcome: Sendable, Equatable {
        case delivered(status: Int)
        case failed(String)
    }

    public var url: String
    public var line: WebhookLine
    public var outcome: Outcome
    public var at: Int64
    /// Whether the line was given up on after this attempt.
    public var markedFailed: Bool
}

extension WebhookPosition {
    /// `line` was delivered: the endpoint goes on after it.
    mutating func recordDelivery(of line: WebhookLine) {
        deliveredCursor = line.cursor
        failingCursor = nil
        failingSince = nil
        attempts = 0
        nextAttemptAt = nil
        lastError = nil
    }

    /// An attempt at `line`, begun at `start`, failed at `now`: the next is scheduled, or,
    /// when the schedule's 24 hours are up, the line is marked failed and the endpoint goes on.
    /// - Returns: The line marked failed, if it was.
    mutating func recordFailure(
        of line: WebhookLine, reason: String, startedAt start: Int64, at now: Int64, schedule: WebhookRetrySchedule
    ) -> WebhookFailedLine? {
        if failingCursor != line.cursor {
            failingCursor = line.cursor
            failingSince = start
            attempts = 0
        }
        attempts += 1
        lastError = reason
        let first = failingSince ?? now
        if let next = schedule.nextAttempt(afterFailure: attempts, at: now, firstAttempt: first) {
            nextAttemptAt = next
            return nil
        }
        let failed = WebhookFailedLine(cursor: line.cursor, webhookId: line.id, firstAttemptAt: first, attempts: attempts, lastError: reason)
        recordDelivery(of: line)
        return failed
    }
}
