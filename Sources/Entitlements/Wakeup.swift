import Foundation

/// A count of signals a background worker waits on: the ``TransactionFinisher`` when
/// finishes were queued, the ``V1NotificationSyncer`` when V1 notifications were noted.
final class Wakeup: @unchecked Sendable {
    private let condition = NSCondition()
    private var signals = 0

    /// Wakes whoever waits.
    func signal() {
        condition.lock()
        signals += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a signal after `seen`, or `deadline`; returns the signals count.
    func wait(after seen: Int, until deadline: Date) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while signals == seen && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        return signals
    }

    /// The signals so far: read it before taking the work, then wait after it.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return signals
    }
}
