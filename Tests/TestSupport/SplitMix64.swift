import TestPKI

/// The tests' deterministic generator: SplitMix64 (TestPKI's ``SeededRandom``, which the
/// benchmark's corpora use too), so every randomized test repeats exactly from its seed.
package typealias SplitMix64 = SeededRandom

extension SeededRandom {
    /// A value in `range`.
    package mutating func int(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &self) }
    /// An index below `count`.
    package mutating func index(_ count: Int) -> Int { Int.random(in: 0..<count, using: &self) }
}
