import Entitlements
import Foundation
import HTTPServer

/// `serve.trustedProxies`: the reverse proxies whose `X-Forwarded-For` the server
/// believes, as addresses or CIDR ranges (`"10.0.0.0/8"`, `"2001:db8::/32"`,
/// `"192.0.2.10"`). A loopback peer (a proxy on the same machine) is always believed.
///
/// The client address of a request is read from the right of `X-Forwarded-For`:
/// starting at the socket peer, while the address at hand is a trusted proxy, the next
/// address to the left is the one it saw; the first address that is not a trusted proxy
/// is the client (the addresses left of it are that client's word).
public struct TrustedProxies: Sendable, Hashable {
    /// One address range: 16 bytes (IPv4 as `::ffff:a.b.c.d`) and how many leading bits count.
    struct Range: Sendable, Hashable {
        var bytes: [UInt8]
        var prefixLength: Int

        func contains(_ address: [UInt8]) -> Bool {
            var bits = prefixLength
            for index in 0..<16 where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if address[index] & mask != bytes[index] & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    var ranges: [Range]

    /// No proxy but loopback.
    public static let loopbackOnly = TrustedProxies(ranges: [])

    init(ranges: [Range]) { self.ranges = ranges }

    /// Reads the list.
    /// - Throws: ``ConfigurationError`` naming the entry that is not an address or a range.
    public init(parsing entries: [String]) throws(ConfigurationError) {
        var ranges: [Range] = []
        for (index, entry) in entries.enumerated() {
            guard let range = Self.range(entry) else {
                throw ConfigurationError(
                    field: "serve.trustedProxies[\(index)]",
                    message: "\"\(entry.prefix(60))\" is not a numeric address or CIDR range, e.g. \"10.0.0.0/8\", \"192.0.2.10\" or \"2001:db8::/32\"")
            }
            ranges.append(range)
        }
        self.ranges = ranges
    }

    static func range(_ text: String) -> Range? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = address(String(parts[0])) else { return nil }
        let isV4 = !parts[0].contains(":")
        let width = isV4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard let value = Int(parts[1]), value >= 0, value <= width, parts[1].allSatisfy(\.isASCII) else { return nil }
            length = value
        }
        return Range(bytes: bytes, prefixLength: isV4 ? length + 96 : length)
    }

    /// A numeric IPv4 or IPv6 address as 16 bytes (IPv4 as `::ffff:a.b.c.d`); `nil` otherwise.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether `address` is loopback or in one of the ranges.
    public func trusts(_ address: String) -> Bool {
        trusts(address) { Self.address(address) }
    }

    /// The same, with `address` read as 16 bytes by `bytes` (`nil`: not a numeric address),
    /// called only when there are ranges to look in.
    private func trusts(_ address: String, bytes: () -> [UInt8]?) -> Bool {
        if ListenAddress.isLoopback(address) { return true }
        guard !ranges.isEmpty, let bytes = bytes() else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The client's address: the socket peer, or read from `X-Forwarded-For` through the
    /// trusted proxies (see the type's description).
    public func client(peer: String, forwardedFor: String?) -> String {
        var address = peer
        guard let forwardedFor, trusts(peer) else { return address }
        for hop in forwardedFor.split(separator: ",").reversed() {
            let hop = hop.trimmingCharacters(in: .whitespaces)
            guard let bytes = Self.address(hop) else { break }
            address = hop
            if !trusts(hop, bytes: { bytes }) { break }
        }
        return address
    }
}
