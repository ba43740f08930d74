/// SplitMix64: a small deterministic generator, so randomized tests and
/// benchmark corpora repeat exactly from their seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value from 0 up to, not including, `bound`.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    /// A value in `range`.
    public mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    /// A value in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    /// One of `elements` (not empty).
    public mutating func pick<T>(_ elements: [T]) -> T { elements[int(0..<elements.count)] }
    /// `array` in a random order.
    public mutating func shuffle<T>(_ array: inout [T]) { array.shuffle(using: &self) }
}
