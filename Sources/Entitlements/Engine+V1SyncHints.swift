import EntitlementCore
import Synchronization

/// The original transaction ids of the V1 notifications an engine rejected, each once,
/// waiting to be synced.
final class V1SyncHints: Sendable {
    private struct Seen {
        var reported: Set<String> = []
        var pending: [String] = []
    }
    private let seen = Mutex(Seen())

    func note(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        seen.withLock { seen in
            for id in ids where seen.reported.insert(id).inserted { seen.pending.append(id) }
        }
    }

    func take() -> [String] {
        seen.withLock { seen in
            defer { seen.pending.removeAll() }
            return seen.pending
        }
    }
}

extension Engine {
    /// The original transaction ids named by V1 notifications rejected since the last
    /// call, each once per engine: `sync --customer` each to ingest its signed history
    /// (`ingest` and `serve` do when `appStoreServerAPI` is configured).
    public func takeV1SyncHints() -> [String] { v1SyncHints.take() }

    func noteV1Notifications(_ items: [AppendItem]) {
        var ids: [String] = []
        for item in items {
            guard case .rejected(let rejection) = item, rejection.code == V1Notification.code,
                let id = V1Notification.originalTransactionId(document: rejection.raw)
            else { continue }
            ids.append(id)
        }
        v1SyncHints.note(ids)
    }
}
