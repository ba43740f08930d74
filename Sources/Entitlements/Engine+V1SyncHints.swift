import EntitlementCore
import Foundation

/// The original transaction ids of the V1 notifications an engine rejected, each once,
/// waiting to be synced; a ``V1NotificationSyncer`` waits on it.
final class V1SyncHints: @unchecked Sendable {
    private let lock = NSLock()
    private var reported: Set<String> = []
    private var pending: [String] = []
    /// Signalled after ids are added, so that a waiter that read ``count`` before its
    /// ``take()`` never misses them.
    private let wakeup = Wakeup()

    func note(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        let added = lock.withLock {
            var added = false
            for id in ids where reported.insert(id).inserted {
                pending.append(id)
                added = true
            }
            return added
        }
        if added { wakeup.signal() }
    }

    func take() -> [String] {
        lock.withLock {
            defer { pending.removeAll() }
            return pending
        }
    }

    /// Wakes whoever waits (``wait(after:until:)``) without a new id.
    func wake() { wakeup.signal() }

    /// Waits until a signal after `seen`, or `deadline`; returns the signals count.
    func wait(after seen: Int, until deadline: Date) -> Int { wakeup.wait(after: seen, until: deadline) }

    var count: Int { wakeup.count }
}

extension Engine {
    /// The original transaction ids named by V1 notifications rejected since the last
    /// call, each once per engine: `sync --customer` each to ingest its signed history
    /// (`ingest` does when `appStoreServerAPI` is configured, `serve` through a
    /// ``V1NotificationSyncer``).
    public func takeV1SyncHints() -> [String] { v1SyncHints.take() }

    /// Notes the V1 notifications among `items`, once they are committed.
    func noteV1Notifications(_ items: [AppendItem]) {
        var ids: [String] = []
        for item in items {
            guard case .rejected(let rejection) = item, rejection.code == V1Notification.code else { continue }
            ids += V1Notification.originalTransactionIds(document: rejection.raw)
        }
        v1SyncHints.note(ids)
    }
}
