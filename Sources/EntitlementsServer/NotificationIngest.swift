import Entitlements
import Foundation

/// `POST /notifications` from the body to the commit, for concurrent requests together.
///
/// A request hands its body over. When fewer than `lanes` verification passes are
/// running, its own thread becomes a lane: it takes every body waiting (its own among
/// them), verifies them in one pass (``DocumentVerifier/verifiedNotifications(_:otherwise:)``:
/// the signature checks of all at once), and hands what the quarantine bound keeps to the
/// ``IngestBatcher`` in one go; then, while bodies wait and its own answer has not come,
/// it makes the next pass. So the lanes verify the next bodies while the committing thread
/// commits the last ones, the passes grow with the load, and both cores stay busy.
///
/// A request is woken once, by the thread that answered it: the committing thread, or
/// the lane for an input the quarantine bound leaves unkept. A lane whose own answer has
/// come while bodies still wait hands its role to one of their requests.
final class NotificationIngest: @unchecked Sendable {
    private final class Request: @unchecked Sendable {
        let body: InputBytes
        /// The quarantine budget's key for the client.
        let client: String
        let wake = DispatchSemaphore(value: 0)
        /// Set under the lock when the request is to lead a pass (its thread was woken for it).
        var leads = false
        /// Whether its thread is a lane now (set and cleared under the lock).
        var inLane = false
        /// The answer, set under the lock before ``wake`` is signalled.
        var answer: (Result<IngestResult, EngineError>, Engine.ReplicationTicket?)?

        init(body: InputBytes, client: String) {
            self.body = body
            self.client = client
        }
    }

    private let engine: Engine
    private let verifier: DocumentVerifier
    private let batcher: IngestBatcher
    private let budget: QuarantineBudget
    private let otherwise: String
    private let lanes: Int
    private let lock = NSLock()
    private var pending: [Request] = []
    private var running = 0
    /// Passes made and the bodies they verified (for tests and the benchmark).
    private var passes = 0
    private var verified = 0

    init(
        engine: Engine, batcher: IngestBatcher, budget: QuarantineBudget, otherwise: String,
        lanes: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    ) {
        self.engine = engine
        verifier = engine.documentVerifier
        self.batcher = batcher
        self.budget = budget
        self.otherwise = otherwise
        self.lanes = lanes
    }

    /// The ingest line of `body`, once committed (and, with replication, on the replica);
    /// or the failure to commit it.
    func ingest(_ body: InputBytes, client: String) -> Result<IngestResult, EngineError> {
        let request = Request(body: body, client: client)
        lock.lock()
        pending.append(request)
        let leads = running < lanes
        if leads {
            running += 1
            request.inLane = true
        }
        lock.unlock()
        if leads { lead(request) }
        while true {
            request.wake.wait()
            lock.lock()
            if request.leads {
                request.leads = false
                lock.unlock()
                lead(request)
                continue
            }
            let (result, ticket) = request.answer!
            lock.unlock()
            return IngestBatcher.confirmed(result, ticket: ticket, engine: engine)
        }
    }

    /// Passes made so far and the bodies they verified.
    var statistics: (passes: Int, bodies: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (passes, verified)
    }

    /// A lane on `own`'s thread (counted in `running`): passes while bodies wait and
    /// `own` has no answer; then the role goes to a waiting request, or ends.
    private func lead(_ own: Request) {
        lock.lock()
        while true {
            if pending.isEmpty {
                running -= 1
                own.inLane = false
                lock.unlock()
                return
            }
            if own.answer != nil {
                own.inLane = false
                // A request whose thread is a lane already takes the bodies on its own.
                guard let next = pending.first(where: { !$0.inLane }) else {
                    running -= 1
                    lock.unlock()
                    return
                }
                next.leads = true
                next.inLane = true
                lock.unlock()
                next.wake.signal()
                return
            }
            let taken = pending
            pending = []
            lock.unlock()
            pass(taken)
            lock.lock()
            passes += 1
            verified += taken.count
        }
    }

    /// Verifies the bodies of `requests` together and hands them to the batcher; answers at
    /// once those the quarantine bound does not keep.
    private func pass(_ requests: [Request]) {
        let items = verifier.verifiedNotifications(requests.map(\.body), otherwise: otherwise)
        let now = Engine.now()
        var jobs: [IngestBatcher.Job] = []
        jobs.reserveCapacity(requests.count)
        var unkept: [(Request, IngestResult)] = []
        for (request, item) in zip(requests, items) {
            if case .rejected(let rejection) = item, !budget.admit(rejection, client: request.client, now: now) {
                unkept.append((request, IngestResult(outcome: .rejected, errorCode: rejection.code, errorMessage: rejection.message, input: 1)))
                continue
            }
            jobs.append(
                IngestBatcher.Job(items: [item]) { [self] result, ticket in
                    answer(request, result.map { results in
                        var line = results[0]
                        line.input = 1
                        return line
                    }, ticket: ticket)
                })
        }
        batcher.submit(jobs)
        if !unkept.isEmpty {
            batcher.nudge()
            for (request, line) in unkept { answer(request, .success(line), ticket: nil) }
        }
    }

    private func answer(_ request: Request, _ result: Result<IngestResult, EngineError>, ticket: Engine.ReplicationTicket?) {
        lock.lock()
        request.answer = (result, ticket)
        lock.unlock()
        request.wake.signal()
    }
}
