/// Arithmetic on 32-byte big-endian numbers, for building altered signatures.
public enum BigEndianArithmetic {
    /// `a − b` for 32-byte big-endian numbers with `a ≥ b`.
    public static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(a[index]) - Int(b[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }
}
