/// The 64-bit FNV-1a hash of a lifecycle event's id (its UTF-8 bytes), the form in
/// which the store keeps which ids are recorded. Built from the id's parts, it equals
/// the hash of the id's text without that text being made.
public struct LifecycleIdHash: Sendable, Hashable {
    /// The hash so far.
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    /// The hash of a whole id.
    public static func of(_ id: String) -> UInt64 {
        var hash = LifecycleIdHash()
        hash.add(id)
        return hash.value
    }

    /// Adds the UTF-8 bytes of `text`.
    public mutating func add(_ text: String) {
        // The bytes read in place: the view's iterator costs more than the hash's arithmetic.
        var text = text
        var value = self.value
        text.withUTF8 { bytes in
            for byte in bytes {
                value ^= UInt64(byte)
                value &*= 0x0000_0100_0000_01b3
            }
        }
        self.value = value
    }

    /// Adds one byte.
    @inline(__always)
    mutating func add(byte: UInt8) {
        value ^= UInt64(byte)
        value &*= 0x0000_0100_0000_01b3
    }

    /// Adds `number` as `String(number)` writes it (decimal, `-` before a negative).
    public mutating func add(_ number: Int64) {
        if number < 0 { add(byte: UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        // At most 20 digits, most significant first.
        var divisor: UInt64 = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            add(byte: UInt8(ascii: "0") + UInt8(magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        }
    }

    /// Adds `type`'s raw value and the `:` after it.
    mutating func add(prefix type: LifecycleEventType) {
        add(type.rawValue)
        add(byte: UInt8(ascii: ":"))
    }

    /// Adds `:`.
    mutating func colon() { add(byte: UInt8(ascii: ":")) }
}
