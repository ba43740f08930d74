import EntitlementCore
@testable import Entitlements
import EventStore
import Foundation
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// One deliverer per database: the lease in `webhook_lease` (migration 016).
@Suite struct WebhookLeaseTests {
    static func store() throws -> EventStore {
        let engine = try E2E.engine()
        return try EventStore(path: engine.databasePath, hash: { _ in [] }, mode: .existing)
    }

    @Test func aHeldLeaseIsRefusedToOthersUntilItExpiresOrIsReleased() throws {
        let store = try Self.store()
        #expect(try store.acquireWebhookLease(holder: "a", now: 1_000, duration: 30_000))
        #expect(try !store.acquireWebhookLease(holder: "b", now: 2_000, duration: 30_000))
        // Its holder renews it.
        #expect(try store.acquireWebhookLease(holder: "a", now: 20_000, duration: 30_000))
        #expect(try store.webhookLease()?.expiresAt == 50_000)
        #expect(try !store.acquireWebhookLease(holder: "b", now: 49_999, duration: 30_000))
        // Expired: taken over.
        #expect(try store.acquireWebhookLease(holder: "b", now: 50_000, duration: 30_000))
        #expect(try store.webhookLease()?.holder == "b")
        #expect(try !store.acquireWebhookLease(holder: "a", now: 50_001, duration: 30_000))
        // Released (only by its holder): free at once.
        try store.releaseWebhookLease(holder: "a")
        #expect(try store.webhookLease()?.holder == "b")
        try store.releaseWebhookLease(holder: "b")
        #expect(try store.webhookLease() == nil)
        #expect(try store.acquireWebhookLease(holder: "a", now: 50_002, duration: 30_000))
    }

    @Test func aLeaseOfAProcessThatEndedIsTakenOverAtOnce() throws {
        let store = try Self.store()
        // A process of this host that has ended (a child, waited for).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 0"]
        try process.run()
        process.waitUntilExit()
        let host = WebhookDeliverer.hostName()
        let dead = "\(host) \(process.processIdentifier) 0000"
        let alive = "\(host) \(getppid()) 0000"
        #expect(WebhookDeliverer.isGone(dead))
        #expect(!WebhookDeliverer.isGone(alive))
        #expect(!WebhookDeliverer.isGone("other-host \(process.processIdentifier) 0000"))
        let now = Engine.now()
        #expect(try store.acquireWebhookLease(holder: dead, now: now, duration: 30_000))
        #expect(try store.acquireWebhookLease(holder: "me", now: now + 1, duration: 30_000, isGone: WebhookDeliverer.isGone))
        #expect(try store.acquireWebhookLease(holder: alive, now: now + 2, duration: 30_000, isGone: { _ in true }))
        #expect(try !store.acquireWebhookLease(holder: "me", now: now + 3, duration: 30_000, isGone: WebhookDeliverer.isGone))
    }

    /// Two deliverers of one database in one process: the second delivers nothing
    /// while the first holds the lease, and waits (deliverDue returns once it has it).
    @Test func aSecondDelivererWaitsForTheFirst() throws {
        let engine = try E2E.engine()
        let endpoint = WebhookEndpoint(url: URL(string: "http://127.0.0.1:9/never")!, signer: WebhookSigner(secret: WebhookUnitTests.secret)!)
        var options = WebhookDeliverer.Options()
        options.pollInterval = 20
        let first = try WebhookDeliverer(engine: engine, endpoints: [endpoint], options: options)
        let second = try WebhookDeliverer(engine: engine, endpoints: [endpoint], options: options)
        _ = try first.deliverDue()
        let done = Mutex(false)
        let thread = Thread {
            _ = try? second.deliverDue()
            done.withLock { $0 = true }
        }
        thread.start()
        // It is waiting: the lease is still the first one's.
        let store = try EventStore(path: engine.databasePath, hash: { _ in [] }, mode: .existing)
        #expect(try store.webhookLease()?.holder == first.holder)
        #expect(!done.withLock { $0 })
        first.release()
        let deadline = Date().addingTimeInterval(30)
        while !done.withLock({ $0 }) && Date() < deadline { usleep(5_000) }
        #expect(done.withLock { $0 })
        #expect(try store.webhookLease()?.holder == second.holder)
        second.release()
    }
}

/// Positions in `webhook_positions`: saved, read back, and never overwritten over a
/// redelivery asked for meanwhile.
@Suite struct WebhookPositionStoreTests {
    @Test func aPositionIsSavedWithItsFailedLinesAndNotOverwrittenOnceMoved() throws {
        let store = try WebhookLeaseTests.store()
        var position = try store.webhookPosition(endpoint: "https://a.example.com/", feed: "changes")
        #expect(position == WebhookPosition(endpoint: "https://a.example.com/", feed: "changes"))
        let read = position
        position.deliveredCursor = 7
        position.failingCursor = 8
        position.failingSince = 100
        position.attempts = 2
        position.nextAttemptAt = 200
        position.lastError = "HTTP 500"
        #expect(try store.saveWebhookPosition(position, expected: read, at: 150))
        #expect(try store.webhookPosition(endpoint: "https://a.example.com/", feed: "changes") == position)
        // Moved by someone else (a redelivery): a writer that read it before does not overwrite it.
        var redelivered = position
        redelivered.deliveredCursor = 0
        redelivered.failingCursor = nil
        redelivered.attempts = 0
        #expect(try store.saveWebhookPosition(redelivered, at: 160))
        var stale = position
        stale.deliveredCursor = 8
        #expect(try !store.saveWebhookPosition(stale, expected: position, at: 170))
        #expect(try store.webhookPosition(endpoint: "https://a.example.com/", feed: "changes").deliveredCursor == 0)
        // A line marked failed is kept, and counted.
        let failed = WebhookFailedLine(cursor: 8, webhookId: "changes:8", firstAttemptAt: 100, attempts: 30, lastError: "TIMEOUT")
        var next = redelivered
        next.deliveredCursor = 8
        #expect(try store.saveWebhookPosition(next, failedLine: failed, expected: redelivered, at: 180))
        #expect(try store.webhookFailedLines(endpoint: "https://a.example.com/", feed: "changes") == [failed])
        #expect(try store.webhookPosition(endpoint: "https://a.example.com/", feed: "changes").failedLines == 1)
        #expect(try store.webhookPosition(endpoint: "https://a.example.com/", feed: "lifecycle").failedLines == 0)
    }
}
