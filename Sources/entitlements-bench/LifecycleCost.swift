/// What recording the lifecycle feed costs a run, measured so that the load of a shared
/// machine falls on both arms: ``rounds`` rounds, each one run with the feed switched
/// off and one with it recorded, in turn off-then-on and on-then-off; each round's
/// ratio per CPU-second, and their median and spread.
struct LifecycleCost {
    /// One round: the same run switched off and recorded.
    struct Pair {
        var off: IngestBench.Run
        var on: IngestBench.Run
    }

    static let rounds = 5

    var pairs: [Pair]

    /// Runs `run(false)` and `run(true)` ``rounds`` times, alternating which goes first.
    static func measure(_ run: (_ lifecycle: Bool) throws -> IngestBench.Run) throws -> LifecycleCost {
        var pairs: [Pair] = []
        for round in 0..<rounds {
            if round % 2 == 0 {
                let off = try run(false)
                pairs.append(Pair(off: off, on: try run(true)))
            } else {
                let on = try run(true)
                pairs.append(Pair(off: try run(false), on: on))
            }
        }
        return LifecycleCost(pairs: pairs)
    }

    static func perCPU(_ run: IngestBench.Run) -> Double { Double(run.notifications) / max(run.cpuSeconds, 1e-9) }

    /// Each round's recorded / switched off, per CPU-second, in percent.
    var ratios: [Double] { pairs.map { Self.perCPU($0.on) / Self.perCPU($0.off) * 100 } }

    var medianRatio: Double { Self.median(ratios) }

    /// The median of each round's ratio of wall-clock rates, in percent.
    var medianWallRatio: Double { Self.median(pairs.map { $0.on.rate / $0.off.rate * 100 }) }

    /// The median rate per CPU-second of one arm.
    func median(_ arm: KeyPath<Pair, IngestBench.Run>) -> Double { Self.median(pairs.map { Self.perCPU($0[keyPath: arm]) }) }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
