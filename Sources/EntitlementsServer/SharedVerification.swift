import Entitlements
import Foundation

/// Verifies the notification bodies of concurrent `POST /notifications` requests together:
/// a request hands its body over; when fewer than `lanes` passes are running, its thread
/// takes every body waiting (its own among them) and verifies them in one pass
/// (``DocumentVerifier/verifiedNotifications(_:otherwise:)``: the signature checks of all
/// at once), then wakes the requests it answered. Requests arriving meanwhile wait for the
/// next pass. No thread of its own: passes run on the requests' threads, at most `lanes` at once.
final class SharedVerification: @unchecked Sendable {
    private final class Job {
        let body: InputBytes
        var item: AppendItem?
        init(body: InputBytes) { self.body = body }
    }

    private let verifier: DocumentVerifier
    private let otherwise: String
    private let lanes: Int
    private let condition = NSCondition()
    private var pending: [Job] = []
    private var running = 0
    /// Passes made and the bodies they verified (for tests and the benchmark).
    private var passes = 0
    private var verified = 0

    init(verifier: DocumentVerifier, otherwise: String, lanes: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        self.verifier = verifier
        self.otherwise = otherwise
        self.lanes = lanes
    }

    /// The body verified, alone or with the bodies of other requests waiting with it.
    func verify(_ body: InputBytes) -> AppendItem {
        let job = Job(body: body)
        condition.lock()
        defer { condition.unlock() }
        pending.append(job)
        while job.item == nil {
            guard running < lanes, !pending.isEmpty else {
                condition.wait()
                continue
            }
            let taken = pending
            pending = []
            running += 1
            condition.unlock()
            let items = verifier.verifiedNotifications(taken.map(\.body), otherwise: otherwise)
            condition.lock()
            for (waiting, item) in zip(taken, items) { waiting.item = item }
            running -= 1
            passes += 1
            verified += taken.count
            condition.broadcast()
        }
        return job.item!
    }

    /// Passes made so far and the bodies they verified.
    var statistics: (passes: Int, bodies: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (passes, verified)
    }
}
