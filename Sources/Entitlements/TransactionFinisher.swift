import EntitlementCore
internal import EventStore
import Foundation
import Synchronization

/// Calls Apple's Finish Transaction for the transactions the engine queued
/// (`appStoreServerAPI.finishTransactions`, specification section 10.5), each once.
///
/// The engine queues, after each committed batch, the transactions it appended for the first
/// time that grant an entitlement or units; the finisher takes what is due (with replicated
/// acknowledgments, once the replica holds it), calls Apple with
/// no database lock held, and records each answer in a short write of its own: `finished`,
/// `failed` (Apple refused it: a 4xx other than 401 and 429), or pending again after a
/// growing delay (no answer, 401, 429, 5xx; given up after ``maximumAttempts``). What is
/// recorded survives a restart, so nothing finished is called again and nothing pending is
/// forgotten.
///
/// ```swift
/// let finisher = try TransactionFinisher(engine: engine)
/// finisher.start()          // while the engine ingests
/// defer { finisher.stop() } // one last pass, then the thread ends
/// ```
public final class TransactionFinisher: Sendable {
    public let engine: Engine
    let clients: [String: AppStoreServerAPIClient]
    let clock: @Sendable () -> Int64
    let report: @Sendable (FinishResult) -> Void
    private let running = Mutex<RunState>(RunState())

    private struct RunState {
        var stopping = false
        /// Stop between calls, leaving what is due for the next run.
        var abandon = false
        var done: DispatchSemaphore?
    }

    /// Attempts before a finish that keeps failing for want of an answer is given up.
    public static let maximumAttempts: Int64 = 8
    /// The first delay before a failed call is made again (it doubles, up to ``maximumDelay``).
    public static let firstDelay: Int64 = 60_000
    public static let maximumDelay: Int64 = 3_600_000
    /// The most finishes one pass calls.
    static let passLimit = 500

    /// - Parameters:
    ///   - engine: the engine whose queued finishes are called and recorded.
    ///   - clients: the API client for each environment (`Production`, `Sandbox`) whose
    ///     transactions are finished.
    ///   - clock: the current time in milliseconds (tests set it).
    ///   - report: called after each call, on the finisher's thread.
    public init(
        engine: Engine, clients: [AppStoreEnvironment: AppStoreServerAPIClient],
        clock: @escaping @Sendable () -> Int64 = { Engine.now() }, report: @escaping @Sendable (FinishResult) -> Void = { _ in }
    ) {
        self.engine = engine
        self.clients = Dictionary(uniqueKeysWithValues: clients.map { ($0.key.rawValue, $0.value) })
        self.clock = clock
        self.report = report
    }

    /// A finisher with a client for each of the configuration's signed environments.
    /// - Throws: ``EngineError`` `CONFIGURATION` without `appStoreServerAPI`, or a key error.
    public convenience init(engine: Engine, report: @escaping @Sendable (FinishResult) -> Void = { _ in }) throws(EngineError) {
        var clients: [AppStoreEnvironment: AppStoreServerAPIClient] = [:]
        for environment in engine.configuration.environments where environment == .production || environment == .sandbox {
            clients[environment] = try AppStoreSync.client(for: engine.configuration, environment: environment, transport: nil)
        }
        self.init(engine: engine, clients: clients, report: report)
    }

    /// Calls Apple for every finish due now and records each answer; returns them in order.
    @discardableResult
    public func finishDue() -> [FinishResult] { finishDue(while: { true }) }

    /// ``finishDue()``, asking `proceed` before each call.
    @discardableResult
    func finishDue(while proceed: () -> Bool) -> [FinishResult] {
        var results: [FinishResult] = []
        while true {
            let due: [(transactionId: String, environment: String, attempts: Int64)]
            do {
                due = try engine.store.withLock { store throws(StoreError) in try store.dueFinishes(now: clock(), limit: Self.passLimit) }
            } catch {
                return results
            }
            if due.isEmpty { return results }
            // With replicated acknowledgments, Apple hears of a transaction only once the
            // replica holds the batch that queued it: what is lost with the machine was never
            // finished. Not confirmed now: left queued for a later pass.
            do { try engine.confirmReplicated() } catch { return results }
            var progressed = false
            for row in due {
                guard proceed() else { return results }
                let result = finish(row.transactionId, environment: row.environment, attempts: row.attempts)
                results.append(result)
                report(result)
                if result.recorded { progressed = true }
            }
            // A pass that could record nothing (the database refuses writes) stops here.
            if !progressed || due.count < Self.passLimit { return results }
        }
    }

    /// One call to Apple and its answer recorded.
    func finish(_ transactionId: String, environment: String, attempts: Int64) -> FinishResult {
        let request = APIRequest.finishTransaction(transactionId: transactionId)
        var result = FinishResult(transactionId: transactionId, environment: environment, request: request.description)
        guard let client = clients[environment] else {
            result.state = .failed
            result.message = "no App Store Server API client for \(environment)"
            result.recorded = record(result, attempts: attempts)
            return result
        }
        do {
            let response = try client.send(request)
            result.status = response.status
            result.state = .finished
            // Finished where the transaction is: Sandbox, when Production did not know it.
            if response.answeredBySandboxFallback { result.environment = AppStoreEnvironment.sandbox.rawValue }
        } catch {
            result.status = error.status
            result.errorCode = error.apiErrorCode
            result.message = error.message
            let transient = error.status == nil || error.status == 401 || error.status == 429 || (error.status ?? 0) >= 500
            result.state = transient && attempts + 1 < Self.maximumAttempts ? .pending : .failed
        }
        result.recorded = record(result, attempts: attempts)
        return result
    }

    private func record(_ result: FinishResult, attempts: Int64) -> Bool {
        let now = clock()
        let delay = min(Self.firstDelay << min(attempts, 20), Self.maximumDelay)
        do {
            try engine.store.withLock { store throws(StoreError) in
                try store.recordFinish(
                    transactionId: result.transactionId, environment: result.environment, state: result.state.rawValue, at: now,
                    nextAttemptAt: result.state == .pending ? now + delay : now, status: result.status, errorCode: result.errorCode,
                    errorMessage: result.message)
            }
            return true
        } catch {
            return false
        }
    }

    /// Finishes what is due on a thread of its own, then again whenever the engine queues
    /// more or a retry falls due, until `stop()`.
    public func start() {
        let done = DispatchSemaphore(value: 0)
        let started = running.withLock { state -> Bool in
            guard state.done == nil else { return false }
            state = RunState(done: done)
            return true
        }
        guard started else { return }
        let thread = Thread { [self] in
            defer { done.signal() }
            var seen = engine.finishWakeup.count
            while !running.withLock({ $0.stopping }) {
                finishDue(while: { !running.withLock { $0.abandon } })
                var deadline = Date(timeIntervalSinceNow: 60)
                if let next = try? engine.store.withLock({ store throws(StoreError) in try store.nextFinishDue() }) {
                    let wait = max(0.05, Double(next - clock()) / 1000)
                    deadline = min(deadline, Date(timeIntervalSinceNow: wait))
                }
                seen = engine.finishWakeup.wait(after: seen, until: deadline)
            }
        }
        thread.name = "entitlements.finish"
        thread.start()
    }

    /// Ends the thread ``start()`` began.
    ///
    /// - Parameter finishingDue: `true` (a command that ends: `ingest` of a file, `sync`)
    ///   waits for the thread, then makes one last pass over what is due, bounded by the
    ///   client's deadlines; without a thread, makes that pass here. `false` (a server that
    ///   must stop within seconds) returns at once: the thread makes no further call, a call
    ///   in flight ends on its own, and what is still pending stays queued for the next run.
    public func stop(finishingDue: Bool = true) {
        let done = running.withLock { state -> DispatchSemaphore? in
            state.stopping = true
            state.abandon = !finishingDue
            return state.done
        }
        engine.finishWakeup.signal()
        guard finishingDue else { return }
        if let done { done.wait() }
        finishDue()
        running.withLock { $0 = RunState() }
    }
}

/// What one Finish Transaction call gave.
public struct FinishResult: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        /// Apple answered with success.
        case finished
        /// To be called again later.
        case pending
        /// Given up: Apple refused it, or it failed too often.
        case failed
    }

    public var transactionId: String
    public var environment: String
    /// `POST /inApps/v1/transactions/{id}/finish`.
    public var request: String
    public var state: State = .failed
    /// The HTTP status, `nil` when there was no answer.
    public var status: Int?
    /// Apple's `errorCode`, when it gave one.
    public var errorCode: Int64?
    /// What went wrong, for a person.
    public var message: String?
    /// Whether the answer was recorded in the database.
    public var recorded = false

    public init(transactionId: String, environment: String, request: String) {
        self.transactionId = transactionId
        self.environment = environment
        self.request = request
    }

    /// `{"request", "transactionId", "environment", "status", "finished", "state", "errorCode", "message"}`.
    public func json() -> JSONValue {
        var object = JSONObject([
            ("request", .string(request)), ("transactionId", .string(transactionId)), ("environment", .string(environment)),
            ("status", status.map { .int(Int64($0)) } ?? .null), ("finished", .bool(state == .finished)), ("state", .string(state.rawValue)),
        ])
        if let errorCode { object["errorCode"] = .int(errorCode) }
        if let message { object["message"] = .string(message) }
        return .object(object)
    }
}
