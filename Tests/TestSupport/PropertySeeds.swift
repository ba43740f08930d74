import Foundation

/// The seeds a randomized property test runs with.
///
/// The suite runs each property on its own few seeds. `PROPERTY_SOAK=N` (N from 2 to 100)
/// runs it on N blocks of as many seeds: the suite's own, then the same range moved up by
/// 1,000, 2,000, ... so a long run tries histories the suite never does, and every failure
/// still repeats from the seed it names:
///
///     PROPERTY_SOAK=15 swift test --filter "PropertyTests|ReplayEqualsIngest"
///
/// A test's expectations that only say its history exercised something (a refund, a
/// spend) hold for the suite's seeds, not for every seed: they are checked where
/// ``isTheSuites(_:)`` says so. The properties themselves are checked on every seed.
package enum PropertySeeds {
    /// How many blocks of seeds each property runs on: 1 unless `PROPERTY_SOAK` says more.
    package static let blocks: Int = {
        guard let text = ProcessInfo.processInfo.environment["PROPERTY_SOAK"], let value = Int(text) else { return 1 }
        return min(max(value, 1), 100)
    }()

    /// The distance between blocks; the suite's own seeds are below it.
    static let block: UInt64 = 1_000

    /// `base`, and with `PROPERTY_SOAK` the further blocks of seeds.
    package static func seeds(_ base: ClosedRange<UInt64>) -> [UInt64] {
        seeds(Array(base))
    }

    /// `base`, and with `PROPERTY_SOAK` the further blocks of seeds.
    package static func seeds(_ base: [UInt64]) -> [UInt64] {
        precondition(base.allSatisfy { $0 < block }, "a property's own seeds are below \(block)")
        return (0..<UInt64(blocks)).flatMap { index in base.map { $0 + index * block } }
    }

    /// Whether `seed` is one of the suite's own (not one a soak added).
    package static func isTheSuites(_ seed: UInt64) -> Bool { seed < block }
}
