import AppStoreVerification
import EntitlementCore
import Foundation
internal import EventStore

extension Engine {
    /// Rebuilds every projection from the log under the configuration's rules.
    ///
    /// The rebuild reads one snapshot of the log on a connection of its own and builds the
    /// next generation beside the current one; ingests go on meanwhile, and the events they
    /// append are caught up with before the new generation takes over in one transaction.
    /// The state it gives is exactly the state ingesting the same events one by one gives.
    /// - Parameters:
    ///   - diff: collect the customers whose active entitlements change (``ReplayReport/diffs``).
    ///   - now: the moment the before-and-after answers are compared at; `nil` for now.
    ///   - progress: called every few thousand events.
    public func replay(
        diff: Bool = false, now: Int64? = nil, progress: (ReplayProgress) -> Void = { _ in }
    ) throws(EngineError) -> ReplayReport {
        do {
            // A connection of its own: the replay reads one snapshot and writes in short
            // batches, so ingests on the engine's write connection carry on meanwhile (the
            // swap applies what they appended). It never holds the engine's lock. It never
            // creates the database, and a read-only engine refuses it (DATABASE_READ_ONLY).
            let store = try EventStore(
                path: databasePath, hash: { SHA256.hash($0) }, hashParts: { SHA256.hash($0, $1) }, mode: mode == .readOnly ? .readOnly : .existing,
                busyTimeoutMilliseconds: configuration.storeBusyTimeout, appUsersFromAccountToken: configuration.appUsers.fromAppAccountToken)
            if replication != nil { try store.leaveCheckpointsToReplication() }
            let report = try store.replay(
                rules: configuration.rules, rulesJSON: rulesJSON, now: now ?? Self.now(), collectDiff: diff,
                progress: progress)
            productWarnings.note(report.unknownProducts, rules: configuration.rules)
            return report
        } catch {
            throw EngineError(error)
        }
    }

    /// Recomputes the log's hash chain, re-verifies every stored JWS against the
    /// configured trust store, and checks that the facts the reducers read and the
    /// columns look-ups read are exactly what each signed JWS says, stopping at the first mismatch; checks
    /// that the immutability triggers are the schema's, and that the log reaches
    /// the head recorded beside the database at the last commit and `expectedHead`.
    public func audit(expectedHead: LogHead? = nil, progress: (Int64) -> Void = { _ in }) throws(EngineError) -> AuditReport {
        let (verifier, productionLeftOut) = try auditVerifier()
        do {
            // On a reader's connection (read-only) and snapshot: an audit never holds the
            // write path, and ingests carry on meanwhile.
            var report = try readers.withReader { store throws(StoreError) in
                // The JWS re-verified a batch at a time on every core; the chain checked in order.
                let lanes = ProcessInfo.processInfo.activeProcessorCount
                return try store.audit(
                    reverifyBatch: { items in verifier.reverify(items, lanes: lanes) },
                    batchSize: DocumentVerifier.auditBatchSize, expectedHead: expectedHead, progress: progress)
            }
            if productionLeftOut, let finding = report.firstMismatch, finding.problem.contains("Production") {
                report.firstMismatch?.problem += " (the database was also configured for Production, whose data is checked against"
                    + " appAppleId: add the app's appAppleId to the configuration to audit it)"
            }
            return report
        } catch {
            throw EngineError(error)
        }
    }
}

extension Engine {
    /// The verifier the audit re-checks the log with: the configuration's, accepting every
    /// environment the database has been configured with (its binding records them). Moving
    /// between Production and Sandbox is allowed (specification section 2), so what was
    /// taken under the other one is no sign of tampering.
    /// - Returns: the verifier, and whether the binding's Production was left out for want
    ///   of an `appAppleId` (the audit's finding then says so).
    func auditVerifier() throws(EngineError) -> (DocumentVerifier, productionLeftOut: Bool) {
        let binding: AppBinding?
        do { binding = try readers.withReader { store throws(StoreError) in try store.appBinding() } } catch { throw EngineError(error) }
        let bound = (binding?.environments ?? []).compactMap(AppStoreEnvironment.init(rawValue:))
        let candidates = bound.filter { environment in
            !configuration.environments.contains(environment) && environment.isLocal == configuration.environment.isLocal
        }
        // Production data is checked against appAppleId: without one configured, it stays out.
        let added = candidates.filter { $0 != .production || configuration.appAppleId != nil }
        let productionLeftOut = candidates.contains(.production) && !added.contains(.production)
        guard !added.isEmpty else { return (documentVerifier, productionLeftOut) }
        var widened = configuration
        widened.environments += added
        return (try DocumentVerifier(configuration: widened), productionLeftOut)
    }
}

extension Engine {
    /// Moves everything committed from SQLite's write-ahead log into the
    /// database file, so that the file alone holds every committed event.
    /// Committed batches are durable without it; the command line calls it
    /// before exiting, so a database file copied afterwards is complete.
    /// - Throws: ``EngineError`` when the database cannot be written.
    /// With replication it does nothing: Litestream alone checkpoints (specification section 15).
    public func checkpoint() throws(EngineError) {
        guard replication == nil else { return }
        do {
            try store.withLock { store throws(StoreError) in try store.checkpoint() }
        } catch {
            throw EngineError(error)
        }
    }
}
