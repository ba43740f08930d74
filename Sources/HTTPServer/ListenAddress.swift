#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a server listens: a numeric IPv4 or IPv6 address (or `localhost`) and a port.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The numeric host, without brackets.
    public var host: String
    /// The port; 0 asks the system for a free one.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
    }

    /// Parses `HOST:PORT`, `[IPv6]:PORT` or `localhost:PORT`; `nil` when malformed.
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), port >= 0, port <= 65535, !host.isEmpty else { return nil }
        self.init(host: String(host), port: port)
        guard isIPv4 || isIPv6 else { return nil }
    }

    var isIPv4: Bool {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }

    var isIPv6: Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1
    }

    /// Whether only this machine can reach the address (127.0.0.0/8 or ::1).
    public var isLoopback: Bool { Self.isLoopback(host) }

    /// Whether a numeric address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x.x.x).
    public static func isLoopback(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return (UInt32(bigEndian: v4.s_addr) >> 24) == 127 }
        if host.lowercased().hasPrefix("::ffff:") { return isLoopback(String(host.dropFirst(7))) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
