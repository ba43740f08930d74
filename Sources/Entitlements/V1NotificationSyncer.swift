import EntitlementCore
import Foundation
import Synchronization

/// Syncs, on a thread of its own, the original transaction id of each V1 notification the
/// engine rejects (`UNVERIFIABLE_V1`), so that what it announced arrives signed: the
/// customer's history, statuses and app transaction from the App Store Server API
/// (`AppStoreSync.customer(_:page:)`), each id once per engine. A server starts it, so
/// that no request waits on Apple.
///
/// ```swift
/// let syncer = try V1NotificationSyncer(engine: engine) { id, outcome in print(id, outcome.totals) }
/// syncer.start()
/// // ...
/// syncer.stop()
/// ```
public final class V1NotificationSyncer: Sendable {
    public let engine: Engine
    let sync: AppStoreSync
    let report: @Sendable (String, SyncOutcome) -> Void
    private struct RunState {
        var stopping = false
        var done: DispatchSemaphore?
    }
    private let running = Mutex(RunState())

    /// - Parameters:
    ///   - sync: the sync that ingests what the API returns.
    ///   - report: called on the syncer's thread with each id synced and the outcome.
    public init(sync: AppStoreSync, report: @escaping @Sendable (String, SyncOutcome) -> Void) {
        self.engine = sync.engine
        self.sync = sync
        self.report = report
    }

    /// A syncer for `engine`'s configuration.
    /// - Throws: ``EngineError`` as ``AppStoreSync/init(engine:environment:)`` does
    ///   (`CONFIGURATION` without an `appStoreServerAPI` section).
    public convenience init(engine: Engine, report: @escaping @Sendable (String, SyncOutcome) -> Void) throws(EngineError) {
        self.init(sync: try AppStoreSync(engine: engine), report: report)
    }

    /// Syncs each id as the engine notes it, until `stop()`.
    public func start() {
        let done = DispatchSemaphore(value: 0)
        let started = running.withLock { state -> Bool in
            guard state.done == nil else { return false }
            state = RunState(done: done)
            return true
        }
        guard started else { return }
        let hints = engine.v1SyncHints
        let thread = Thread { [self] in
            defer { done.signal() }
            var seen = hints.count
            while !running.withLock({ $0.stopping }) {
                for id in engine.takeV1SyncHints() {
                    if running.withLock({ $0.stopping }) { break }
                    report(id, sync.customer(id) { _ in })
                }
                seen = hints.wait(after: seen, until: Date(timeIntervalSinceNow: 60))
            }
        }
        thread.name = "entitlements.v1sync"
        thread.start()
    }

    /// Ends the thread ``start()`` began: no further id is synced; waits at most `timeout`
    /// seconds for a sync under way (which commits page by page, so an interrupted one
    /// loses nothing it committed).
    public func stop(timeout: Double = 5) {
        let done = running.withLock { state -> DispatchSemaphore? in
            state.stopping = true
            return state.done
        }
        engine.v1SyncHints.wake()
        if let done { _ = done.wait(timeout: .now() + timeout) }
    }
}
