import AppStoreVerification
import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

/// What `PATH.plan.json` records beside a scale database: the plan it is built for, the
/// months of the plan ingested so far, and how many further ingests were made on it.
///
/// A month is recorded once its `Engine.ingest` has returned and the engine has
/// checkpointed, so a build killed part-way resumes at the first month not recorded.
/// A file without `monthsBuilt` (written before builds could resume) is of a finished build.
struct ScaleProgress: Equatable {
    var events: Int
    var customers: Int
    var monthsBuilt: Int
    var furtherRuns: Int

    /// The progress recorded at `path`, or `nil` when there is none or it cannot be read.
    static func read(_ path: String) -> ScaleProgress? {
        guard let data = FileManager.default.contents(atPath: path),
            let json = try? JSONParser().parse(String(decoding: data, as: UTF8.self)),
            case .int(let events)? = json["events"], case .int(let customers)? = json["customers"]
        else { return nil }
        var progress = ScaleProgress(events: Int(events), customers: Int(customers), monthsBuilt: Int.max, furtherRuns: 0)
        if case .int(let months)? = json["monthsBuilt"] { progress.monthsBuilt = Int(months) }
        if case .int(let runs)? = json["furtherRuns"] { progress.furtherRuns = Int(runs) }
        return progress
    }

    /// Writes the progress to `path` in one step (a new file renamed over the old one).
    func write(_ path: String) throws {
        var json = JSONObject([("events", .int(Int64(events))), ("customers", .int(Int64(customers))), ("furtherRuns", .int(Int64(furtherRuns)))])
        if monthsBuilt != Int.max { json["monthsBuilt"] = .int(Int64(monthsBuilt)) }
        try Data(JSONWriter.string(.object(json)).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

extension ScaleBench.Run {
    /// What the build stage left: the roots the database's events are signed by, the
    /// further ingests made on it before, and whether the build was stopped part-way.
    struct Built {
        var roots: [[UInt8]]
        var furtherRuns: Int
        var stopped: Bool
    }

    /// Reuses the kept database when `--reuse-db` and it was built for this plan, finishing
    /// its build first when a sitting before stopped part-way; else builds it anew.
    func buildOrReuse() throws -> Built {
        if options.reuse, FileManager.default.fileExists(atPath: path), !ScaleBench.keptRoots(path).isEmpty,
            let progress = ScaleProgress.read(planPath), progress.events == plan.events, progress.customers == plan.customers
        {
            if progress.monthsBuilt >= plan.eventsPerCustomer {
                note("scale: reusing \(path) (\(progress.furtherRuns) further ingest(s) made on it before)")
                report.row("build", "reused \(path)", "")
                return Built(roots: ScaleBench.keptRoots(path), furtherRuns: progress.furtherRuns, stopped: false)
            }
            // This sitting signs with its own PKI: its root is kept beside the others first.
            try keepRoot()
            let stopped = try buildDatabase(from: progress, resumed: true)
            return Built(roots: ScaleBench.keptRoots(path), furtherRuns: progress.furtherRuns, stopped: stopped)
        }
        Storage.remove(path)
        removeSidecars()
        try keepRoot()
        let progress = ScaleProgress(events: plan.events, customers: plan.customers, monthsBuilt: 0, furtherRuns: 0)
        try progress.write(planPath)
        let stopped = try buildDatabase(from: progress, resumed: false)
        return Built(roots: ScaleBench.keptRoots(path), furtherRuns: 0, stopped: stopped)
    }

    /// Keeps this run's root beside the database, after the ones kept before: `PATH.root.der`
    /// when none is, else `PATH.root-K.der` with the next free K.
    func keepRoot() throws {
        let kept = ScaleBench.keptRoots(path).count
        try Data(pki.rootDER).write(to: URL(fileURLWithPath: kept == 0 ? rootPath : path + ".root-\(kept).der"))
    }

    /// Signs the plan's notifications batch by batch (over every core) and ingests them
    /// through `Engine.ingest` with 2 workers, one call per month of the history, from the
    /// first month `progress` does not record; each month recorded once ingested and
    /// checkpointed. Returns whether `--stop-after` stopped the build before its end.
    func buildDatabase(from progress: ScaleProgress, resumed: Bool) throws -> Bool {
        let first = progress.monthsBuilt
        let stopAt = options.stopAfter.map { min($0, plan.events) } ?? plan.events
        note(
            "scale: \(resumed ? "resuming at month \(first + 1) of \(plan.eventsPerCustomer):" : "building") \(plan.events) notifications over \(plan.customers) customers (\(plan.eventsPerCustomer) each) into \(path) ..."
        )
        let sample = pki.sign(plan.payloads(customer: 0, event: 0).transaction)
        guard ScalePlan.body(signedPayload: sample) == TestPayloads.body(signedPayload: sample) else {
            throw BenchFailure("ScalePlan.body(signedPayload:) no longer writes what TestPayloads.body(signedPayload:) does")
        }
        let engine = try Engine(configuration: ScaleBench.configuration(roots: ScaleBench.keptRoots(path)), databasePath: path)
        let batch = 256
        let start = Clock.now()
        let cpu = Clock.processCPU()
        var signingSeconds = 0.0
        var appended = 0
        var duplicates = 0
        var firstProblem: String? = nil
        var lastNote = start
        var recorded = progress
        var stopped = false
        for month in first..<plan.eventsPerCustomer {
            var index = month * plan.customers
            let end = min((month + 1) * plan.customers, stopAt)
            guard index < end else {
                stopped = stopAt < plan.events
                break
            }
            try engine.ingest(
                batches: {
                    guard index < end else { return nil }
                    let upper = min(index + batch, end)
                    defer { index = upper }
                    let signing = Clock.now()
                    let bodies = plan.bodies(index..<upper, pki: pki)
                    signingSeconds += Clock.now() - signing
                    return bodies
                }, workers: 2, receivedAt: ScalePlan.receivedBy(event: month),
                deliver: { results in
                    for result in results {
                        switch result.outcome {
                        case .appended: appended += 1
                        // Ingested by a sitting before that was stopped in this month.
                        case .duplicate: duplicates += 1
                        default:
                            if firstProblem == nil {
                                firstProblem = "\(result.outcome.rawValue): \(result.errorCode ?? "") \(result.errorMessage ?? "")"
                            }
                        }
                    }
                    if Clock.now() - lastNote > 15 {
                        lastNote = Clock.now()
                        note("scale: \(appended) notifications appended, \(Format.count(Double(appended) / (lastNote - start))) /s with signing")
                    }
                })
            guard end == (month + 1) * plan.customers || end == plan.events else {
                stopped = true
                break
            }
            try engine.checkpoint()
            recorded.monthsBuilt = month + 1
            try recorded.write(planPath)
        }
        let seconds = Clock.now() - start
        let cpuSeconds = Clock.processCPU() - cpu
        if let firstProblem { throw BenchFailure("the build had a notification not appended: \(firstProblem)") }
        if stopped {
            note("scale: stopped after the plan's first \(stopAt) notifications (--stop-after), \(recorded.monthsBuilt) months recorded; run again with --reuse-db to resume")
            return true
        }
        let total = try EventStore(path: path, hash: { SHA256.hash($0) }, mode: .readOnly).eventCount()
        guard total == Int64(plan.events) else {
            throw BenchFailure("the built database holds \(total) events, the plan \(plan.events)")
        }
        let done = appended + duplicates
        note("scale: built in \(Format.fixed(seconds, 1)) s")
        report.row(
            "build",
            "\(Format.count(Double(done))) signed notifications ingested (signing included, same threads)"
                + (resumed ? ", resumed at month \(first + 1) of \(plan.eventsPerCustomer), \(Format.count(Double(duplicates))) of them ingested before" : ""),
            Format.fixed(seconds, 1) + " s, " + Format.count(Double(done) / seconds) + " /s")
        report.row("build", "  of which signing the corpus (wall-clock, 2 cores)", Format.fixed(signingSeconds, 1) + " s")
        report.section(
            "build",
            [
                "notifications": .int(Int64(done)), "duplicates": .int(Int64(duplicates)), "firstMonth": .int(Int64(first)),
                "customers": .int(Int64(plan.customers)), "eventsPerCustomer": .int(Int64(plan.eventsPerCustomer)),
                "seconds": .double(seconds), "cpuSeconds": .double(cpuSeconds), "signingSeconds": .double(signingSeconds),
                "peakRSS": .int(Machine.statusBytes("VmHWM")),
            ])
        return false
    }
}
