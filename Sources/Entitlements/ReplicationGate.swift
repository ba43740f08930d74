import Foundation

/// Confirms that commits reached the replica before they are acknowledged, one
/// request to Litestream for whatever was committed meanwhile (group commit).
///
/// A caller that has committed takes a ticket and waits. When no request is under
/// way, it sends one, which covers every ticket issued before it was sent; tickets
/// issued while it is under way wait for it to end and then for the next one. A
/// caller gives up at its own deadline (``ReplicationConfiguration/Litestream/timeoutMilliseconds``
/// after its commit); while the socket cannot be reached (Litestream restarting)
/// the request is tried again until then.
final class ReplicationGate: @unchecked Sendable {
    let control: LitestreamControl
    let timeout: Duration
    private let condition = NSCondition()
    /// Tickets issued: one per commit awaiting confirmation.
    private var issued: UInt64 = 0
    /// Every ticket up to this one is on the replica.
    private var confirmed: UInt64 = 0
    private var requestUnderWay = false
    /// Requests sent to Litestream, for tests and the benchmark.
    private var requests = 0

    init(settings: ReplicationConfiguration.Litestream, databasePath: String) {
        let absolute = databasePath.hasPrefix("/") ? databasePath : FileManager.default.currentDirectoryPath + "/" + databasePath
        control = LitestreamControl(socketPath: settings.socketPath, databasePath: URL(fileURLWithPath: absolute).standardized.path)
        timeout = .milliseconds(settings.timeoutMilliseconds)
    }

    /// Returns once everything committed before the call is on the replica.
    /// - Throws: ``EngineError`` `REPLICATION_TIMEOUT` when Litestream has not confirmed it in time.
    func confirm() throws(EngineError) {
        try confirm(ticket: ticket())
    }

    /// A ticket for everything committed before the call, to wait for later with
    /// ``confirm(ticket:)`` (a committing thread takes it, the acknowledging threads wait).
    func ticket() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        issued += 1
        return issued
    }

    /// Returns once everything committed before `ticket` was taken is on the replica.
    /// - Throws: ``EngineError`` `REPLICATION_TIMEOUT` when Litestream has not confirmed it in time.
    func confirm(ticket: UInt64) throws(EngineError) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        condition.lock()
        var lastFailure: LitestreamControl.Failure?
        while confirmed < ticket {
            if !requestUnderWay {
                requestUnderWay = true
                requests += 1
                let covers = issued
                condition.unlock()
                let outcome = send(deadline: deadline)
                condition.lock()
                requestUnderWay = false
                if case .failure(let failure) = outcome {
                    // An answer Litestream gave (the database is not one it replicates, say) is
                    // kept over the deadline that the attempts after it ran into.
                    lastFailure = failure.reported(over: lastFailure)
                } else {
                    confirmed = max(confirmed, covers)
                }
                condition.broadcast()
                if confirmed < ticket && ContinuousClock.now >= deadline { break }
            } else {
                let left = ContinuousClock.now.duration(to: deadline)
                if left <= .zero { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18))
            }
        }
        let done = confirmed >= ticket
        condition.unlock()
        guard done else {
            throw EngineError(
                code: .replicationTimeout,
                message:
                    "committed locally, but Litestream did not confirm within \(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000) ms that it reached the replica (\(lastFailure?.description ?? "no answer")); send it again: it is a duplicate once replicated"
            )
        }
    }

    /// One request, tried again (every 50 ms) while the socket cannot be reached or Litestream
    /// answers that the replica is behind, until `deadline`.
    private func send(deadline: ContinuousClock.Instant) -> Result<UInt64, LitestreamControl.Failure> {
        var failure: LitestreamControl.Failure?
        while true {
            do throws(LitestreamControl.Failure) {
                return .success(try control.syncAndWait(deadline: deadline))
            } catch {
                failure = error.reported(over: failure)
                if ContinuousClock.now.advanced(by: .milliseconds(50)) >= deadline { return .failure(failure ?? error) }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Requests sent to Litestream so far.
    var requestCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return requests
    }
}
