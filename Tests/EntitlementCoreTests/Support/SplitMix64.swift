/// A small deterministic PRNG (SplitMix64) so randomized tests repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `range`.
    mutating func int(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &self) }
    /// An index below `count`.
    mutating func index(_ count: Int) -> Int { Int.random(in: 0..<count, using: &self) }
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    /// One of `elements`.
    mutating func pick<T>(_ elements: [T]) -> T { elements[index(elements.count)] }
}
