internal import CLibSSL
import Foundation
internal import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP/1.1 client on POSIX sockets and OpenSSL's libssl: one connection per
/// request (`Connection: close`), a deadline for the whole exchange, bounded responses.
///
/// HTTPS always verifies the server: the certificate chain against the system's trust
/// store (OpenSSL's default paths, or `SSL_CERT_FILE`; ``Options/trustedCertificatesFile``
/// replaces it), and the host name (or IP address) the URL names against the
/// certificate. TLS 1.2 or later. There is no switch to turn verification off.
///
/// libssl rather than `URLSession`: FoundationNetworking needs libcurl's development
/// files to link a static binary, and libcurl (with its own dependencies) at run time;
/// libssl ships in the same system package as the libcrypto the engine already needs.
///
/// The process ignores `SIGPIPE` once a client exists (a peer that closes while a
/// request is being written is reported as an error, not a signal that kills the process).
public final class HTTPClient: HTTPTransport, @unchecked Sendable {
    /// Limits and trust.
    public struct Options: Sendable {
        /// Seconds allowed for the whole request: name resolution, connect, TLS handshake,
        /// send, and receive to the last byte of the body, however the peer paces it.
        public var timeout: Double = 30
        /// The largest response accepted, headers and body.
        public var maximumResponseBytes = 32 << 20
        /// A PEM file of CA certificates to trust instead of the system's (tests, private CAs).
        public var trustedCertificatesFile: String? = nil
        /// When a response passes ``maximumResponseBytes`` after its head was read: answer
        /// the head (status and headers, no body), reading no further, instead of failing.
        public var headOnlyPastLimit = false
        /// An HTTP CONNECT proxy (`http://host:port`) for `https` requests; `nil` for none.
        /// Loopback hosts never use it, nor hosts ``noProxy`` names.
        public var proxy: URL? = nil
        /// Hosts that do not use ``proxy``: a name matches itself and its subdomains
        /// (`example.com` and `.example.com` both cover `api.example.com`); `*` matches every host.
        public var noProxy: [String] = []
        public init() {}
    }

    /// The most bytes a proxy's answer head to `CONNECT` may take.
    public static let maximumProxyHeadBytes = 16 << 10

    public let options: Options
    /// The TLS context (trust store, verification mode), shared by all connections.
    private let context: OpaquePointer

    /// - Throws: ``HTTPClientError`` (`TLS_FAILURE`) when the trust store cannot be loaded.
    public init(options: Options = Options()) throws(HTTPClientError) {
        self.options = options
        signal(SIGPIPE, SIG_IGN)
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HTTPClientError(.tlsFailure, "OpenSSL cannot make a TLS context: \(Self.drainErrors())")
        }
        _ = clibssl_set_min_tls12(context)
        clibssl_set_peer_verification(context)
        let loaded: Int32
        if let file = options.trustedCertificatesFile {
            loaded = SSL_CTX_load_verify_locations(context, file, nil)
        } else {
            loaded = SSL_CTX_set_default_verify_paths(context)
        }
        guard loaded == 1 else {
            SSL_CTX_free(context)
            throw HTTPClientError(
                .tlsFailure, "cannot load trusted certificates from \(options.trustedCertificatesFile ?? "the system's default paths"): \(Self.drainErrors())")
        }
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// Whether `host` is this machine's loopback interface: a literal address in 127.0.0.0/8
    /// or `::1` (bracketed or not), or `localhost` when every address it resolves to is one.
    /// Any other name is not, whatever it resolves to now: its owner can change that.
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let literal = isLoopbackLiteral(bare) { return literal }
        guard bare.lowercased() == "localhost" else { return false }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = SystemCalls.streamType
        var list: UnsafeMutablePointer<addrinfo>? = nil
        guard getaddrinfo(bare, nil, &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            guard isLoopback(address.pointee) else { return false }
            entry = address.pointee.ai_next
        }
        return true
    }

    /// Whether a numeric address is a loopback one (127.0.0.0/8, `::1`, `::ffff:127.x.x.x`);
    /// `nil` when `text` is not a numeric address.
    static func isLoopbackLiteral(_ text: String) -> Bool? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return isLoopback(v6) }
        return nil
    }

    static func isLoopback(_ v6: in6_addr) -> Bool {
        withUnsafeBytes(of: v6) { bytes in
            let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            return (bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1) || (mapped && bytes[12] == 127)
        }
    }

    /// Whether a resolved address is a loopback one.
    static func isLoopback(_ address: addrinfo) -> Bool {
        guard let socketAddress = address.ai_addr else { return false }
        switch address.ai_family {
        case AF_INET:
            return socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) >> 24 == 127 }
        case AF_INET6:
            return socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { isLoopback($0.pointee.sin6_addr) }
        default:
            return false
        }
    }

    /// Sends `request` and reads the whole response.
    /// - Throws: ``HTTPClientError``: no connection, a refused certificate, a timeout, or a
    ///   response that is not HTTP/1.1.
    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        guard let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var host = components.host, !host.isEmpty
        else {
            throw HTTPClientError(.connectionFailed, "not an http(s) URL: \(request.url.absoluteString)")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        let deadline = Deadline(seconds: options.timeout)
        let socket: Int32
        if scheme == "https", let proxy = options.proxy, Self.usesProxy(host: host, noProxy: options.noProxy) {
            socket = try Self.tunnel(through: proxy, to: host, port: port, deadline: deadline)
        } else {
            socket = try Self.connect(host: host, port: port, deadline: deadline, loopbackOnly: scheme == "http")
        }
        defer { close(socket) }
        let stream: ByteStream
        if scheme == "https" {
            stream = try TLSStream(context: context, socket: socket, host: host, deadline: deadline)
        } else {
            stream = PlainStream(socket: socket, deadline: deadline)
        }

        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let defaultPort = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        let hostHeader = (host.contains(":") ? "[\(host)]" : host) + (defaultPort ? "" : ":\(port)")
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        for (name, value) in request.headers {
            guard !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }), !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw HTTPClientError(.protocolError, "header \(name) contains a line break")
            }
            head += "\(name): \(value)\r\n"
        }
        if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        try stream.write(Array(head.utf8) + request.body)

        var reader = HTTPResponseReader(method: request.method)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = try stream.read(into: &buffer)
            if count > 0 {
                reader.append(buffer[0..<count])
                if reader.received.count > options.maximumResponseBytes {
                    if options.headOnlyPastLimit, let head = reader.headRead { return head }
                    throw HTTPClientError(.protocolError, "the response exceeds \(options.maximumResponseBytes) bytes")
                }
            }
            switch try reader.next(atEOF: count == 0) {
            case .complete(let response): return response
            case .incomplete:
                if count == 0 { throw HTTPClientError(.protocolError, "the connection closed before the response was complete") }
            }
        }
    }

    // MARK: Proxies

    /// Whether a request to `host` goes through the proxy: not for a loopback host, nor a
    /// host `noProxy` names (itself or a parent domain; `*` for all).
    public static func usesProxy(host: String, noProxy: [String]) -> Bool {
        let bare = (host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host).lowercased()
        if isLoopback(bare) { return false }
        for raw in noProxy {
            var entry = raw.trimmingCharacters(in: .whitespaces).lowercased()
            if entry == "*" { return false }
            if entry.hasPrefix("*.") { entry.removeFirst(2) } else if entry.hasPrefix(".") { entry.removeFirst() }
            if entry.hasPrefix("[") && entry.hasSuffix("]") { entry = String(entry.dropFirst().dropLast()) }
            if entry.isEmpty { continue }
            if bare == entry || bare.hasSuffix("." + entry) { return false }
        }
        return true
    }

    /// The proxy a URL names: `http://host[:port]` (or `host:port`, read as http), port 80
    /// by default; `nil` when it is not one.
    public static func proxyURL(_ text: String) -> URL? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let full = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: full), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty, components.query == nil, components.user == nil,
            components.path.isEmpty || components.path == "/"
        else { return nil }
        return URL(string: "http://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(components.port ?? 80)")
    }

    /// The proxy settings of an environment: `HTTPS_PROXY` (else `https_proxy`) and
    /// `NO_PROXY` (else `no_proxy`, comma-separated). `proxy` is `nil` when unset or empty;
    /// `invalid` holds a value set that is not a proxy URL.
    public static func proxySettings(environment: [String: String]) -> (proxy: URL?, noProxy: [String], invalid: String?) {
        let noProxy = (environment["NO_PROXY"] ?? environment["no_proxy"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        guard let text = environment["HTTPS_PROXY"] ?? environment["https_proxy"],
            !text.trimmingCharacters(in: .whitespaces).isEmpty
        else { return (nil, noProxy, nil) }
        guard let url = proxyURL(text) else { return (nil, noProxy, text) }
        return (url, noProxy, nil)
    }

    /// A socket connected through `proxy` to `host:port` by `CONNECT`: the proxy's answer
    /// head is read (at most ``maximumProxyHeadBytes``, within the deadline), and anything
    /// but `200` is `PROXY_REFUSED`. The caller starts TLS to `host` over it.
    static func tunnel(through proxy: URL, to host: String, port: Int, deadline: Deadline) throws(HTTPClientError) -> Int32 {
        guard var proxyHost = proxy.host, !proxyHost.isEmpty else {
            throw HTTPClientError(.connectionFailed, "not a proxy URL: \(proxy.absoluteString)")
        }
        if proxyHost.hasPrefix("[") && proxyHost.hasSuffix("]") { proxyHost = String(proxyHost.dropFirst().dropLast()) }
        let proxyPort = proxy.port ?? 80
        let proxyName = "\(proxyHost.contains(":") ? "[\(proxyHost)]" : proxyHost):\(proxyPort)"
        let socket = try connect(host: proxyHost, port: proxyPort, deadline: deadline)
        do throws(HTTPClientError) {
            let stream = PlainStream(socket: socket, deadline: deadline)
            let authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
            try stream.write(Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: entitlements-engine\r\n\r\n".utf8))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            var headEnd: Int? = nil
            while headEnd == nil {
                let count = try stream.read(into: &buffer)
                guard count > 0 else {
                    throw HTTPClientError(.proxyRefused, "the proxy \(proxyName) closed the connection before answering CONNECT \(authority)")
                }
                received.append(contentsOf: buffer[0..<count])
                headEnd = HTTPResponseParser.find(Array("\r\n\r\n".utf8), in: received)
                if headEnd == nil && received.count > maximumProxyHeadBytes {
                    throw HTTPClientError(.protocolError, "the proxy \(proxyName)'s answer to CONNECT exceeds \(maximumProxyHeadBytes) bytes")
                }
            }
            let head = String(decoding: received[0..<headEnd!], as: UTF8.self)
            let statusLine = head.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
                throw HTTPClientError(.protocolError, "the proxy \(proxyName) answered CONNECT with \"\(statusLine.prefix(100))\", not an HTTP/1.x status line")
            }
            guard status == 200 else {
                throw HTTPClientError(
                    .proxyRefused, "the proxy \(proxyName) refused CONNECT \(authority): \(status)\(parts.count > 2 ? " " + parts[2] : "")")
            }
            guard received.count == headEnd! + 4 else {
                throw HTTPClientError(.protocolError, "the proxy \(proxyName) sent bytes after its 200 to CONNECT before the TLS handshake began")
            }
            return socket
        } catch {
            close(socket)
            throw error
        }
    }

    // MARK: Connecting

    /// A connected, non-blocking TCP socket to `host:port`.
    /// - Parameter loopbackOnly: connect only to loopback addresses (plain `http`, whose
    ///   bearer token must not leave the machine), whatever `host` resolves to now.
    static func connect(host: String, port: Int, deadline: Deadline, loopbackOnly: Bool = false) throws(HTTPClientError) -> Int32 {
        let list = try resolve(host: host, port: port, deadline: deadline)
        defer { freeaddrinfo(list) }
        var lastError = "no address to try"
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let address = entry {
            entry = address.pointee.ai_next
            if loopbackOnly && !isLoopback(address.pointee) {
                lastError = "an address that is not loopback (plain http goes only to loopback: use https)"
                continue
            }
            let fd = SystemCalls.socket(family: address.pointee.ai_family, type: address.pointee.ai_socktype, protocol: address.pointee.ai_protocol)
            if fd < 0 {
                lastError = String(cString: strerror(errno))
                continue
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if SystemCalls.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return fd }
            guard errno == EINPROGRESS else {
                lastError = String(cString: strerror(errno))
                close(fd)
                continue
            }
            do {
                try wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: "connecting to \(host):\(port)")
            } catch {
                close(fd)
                throw error
            }
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
            if socketError == 0 { return fd }
            lastError = String(cString: strerror(socketError))
            close(fd)
        }
        throw HTTPClientError(.connectionFailed, "cannot connect to \(host):\(port): \(lastError)")
    }

    /// The addresses of `host:port` (free them with `freeaddrinfo`), resolved within the deadline.
    ///
    /// `getaddrinfo` takes no time limit, so it runs on a thread of its own; at the deadline
    /// its answer is left to that thread to free.
    static func resolve(host: String, port: Int, deadline: Deadline) throws(HTTPClientError) -> UnsafeMutablePointer<addrinfo> {
        let resolution = Resolution()
        let thread = Thread { resolution.run(host: host, port: port) }
        thread.name = "entitlements.resolve"
        thread.start()
        guard resolution.wait(until: deadline) else {
            throw HTTPClientError(.timeout, "the exchange did not complete within \(deadline.seconds) s (while resolving \(host))")
        }
        let (status, list) = resolution.outcome
        guard status == 0, let list else {
            if let list { freeaddrinfo(list) }
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw HTTPClientError(.connectionFailed, "cannot resolve \(host): \(reason)")
        }
        return list
    }

    /// Waits until `fd` is ready for `events`, or throws `TIMEOUT` at the deadline.
    static func wait(_ fd: Int32, for events: Int16, deadline: Deadline, doing what: String) throws(HTTPClientError) {
        while true {
            try deadline.check(doing: what)
            let remaining = deadline.remainingMilliseconds
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 1_000)))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR {
                throw HTTPClientError(.connectionFailed, "poll failed while \(what): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func drainErrors() -> String { OpenSSLError.drain() }
}

extension HTTPClientError.Code {
    /// The HTTP CONNECT proxy answered with a status other than `200` (or closed before answering).
    public static let proxyRefused = HTTPClientError.Code(rawValue: "PROXY_REFUSED")
}

/// A point in time (monotonic clock) by which a request must be done.
struct Deadline {
    let seconds: Double
    private let end: UInt64

    init(seconds: Double) {
        self.seconds = seconds
        end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
    }

    var remainingMilliseconds: Int {
        let now = DispatchTime.now().uptimeNanoseconds
        return now >= end ? 0 : Int((end - now) / 1_000_000) + 1
    }

    var dispatchTime: DispatchTime { DispatchTime(uptimeNanoseconds: end) }

    /// Throws `TIMEOUT` once the deadline has passed: called before every read and write,
    /// so a peer that keeps sending (or taking) a byte at a time is cut off too.
    func check(doing what: String) throws(HTTPClientError) {
        guard remainingMilliseconds > 0 else {
            throw HTTPClientError(.timeout, "the exchange did not complete within \(seconds) s (while \(what))")
        }
    }
}

/// One `getaddrinfo` call on a thread of its own, whose caller may stop waiting for it.
private final class Resolution: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var status: Int32 = 0
    private var list: UnsafeMutablePointer<addrinfo>? = nil
    private var abandoned = false

    func run(host: String, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = SystemCalls.streamType
        var result: UnsafeMutablePointer<addrinfo>? = nil
        let code = getaddrinfo(host, String(port), &hints, &result)
        lock.lock()
        defer { lock.unlock() }
        if abandoned {
            if let result { freeaddrinfo(result) }
            return
        }
        status = code
        list = result
        done.signal()
    }

    /// Whether the answer came before the deadline; when not, the thread frees it.
    func wait(until deadline: Deadline) -> Bool {
        if done.wait(timeout: deadline.dispatchTime) == .success { return true }
        lock.lock()
        defer { lock.unlock() }
        if done.wait(timeout: .now()) == .success { return true }
        abandoned = true
        return false
    }

    var outcome: (Int32, UnsafeMutablePointer<addrinfo>?) {
        lock.lock()
        defer { lock.unlock() }
        return (status, list)
    }
}

/// Bytes to and from a connected peer, within a deadline.
protocol ByteStream {
    func write(_ bytes: [UInt8]) throws(HTTPClientError)
    /// Reads what is available (waiting for something); 0 at end of stream.
    func read(into buffer: inout [UInt8]) throws(HTTPClientError) -> Int
}

/// A plain TCP connection (`http://`, loopback only by configuration).
struct PlainStream: ByteStream {
    let socket: Int32
    let deadline: Deadline

    func write(_ bytes: [UInt8]) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            try deadline.check(doing: "sending the request")
            let written = bytes.withUnsafeBytes { SystemCalls.send(socket, $0.baseAddress! + offset, bytes.count - offset) }
            if written >= 0 {
                offset += written
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                try HTTPClient.wait(socket, for: Int16(POLLOUT), deadline: deadline, doing: "sending the request")
            } else {
                throw HTTPClientError(.connectionFailed, "sending the request failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    func read(into buffer: inout [UInt8]) throws(HTTPClientError) -> Int {
        while true {
            try deadline.check(doing: "receiving the response")
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress!, $0.count, 0) }
            if count >= 0 { return count }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                try HTTPClient.wait(socket, for: Int16(POLLIN), deadline: deadline, doing: "waiting for the response")
            } else {
                throw HTTPClientError(.connectionFailed, "reading the response failed: \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// A TLS connection over a non-blocking socket, its peer verified during the handshake.
final class TLSStream: ByteStream {
    let ssl: OpaquePointer
    let socket: Int32
    let deadline: Deadline

    init(context: OpaquePointer, socket: Int32, host: String, deadline: Deadline) throws(HTTPClientError) {
        guard let ssl = SSL_new(context) else {
            throw HTTPClientError(.tlsFailure, "OpenSSL cannot make a TLS connection: \(OpenSSLError.drain())")
        }
        self.ssl = ssl
        self.socket = socket
        self.deadline = deadline
        _ = SSL_set_fd(ssl, socket)
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        if isAddress {
            // An IP address is matched against the certificate's IP address entries.
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 else {
                throw HTTPClientError(.tlsFailure, "cannot check the certificate against address \(host): \(OpenSSLError.drain())")
            }
        } else {
            // Server Name Indication, and the name the certificate must carry.
            guard clibssl_set_sni(ssl, host) == 1, SSL_set1_host(ssl, host) == 1 else {
                throw HTTPClientError(.tlsFailure, "cannot set the expected host name \(host): \(OpenSSLError.drain())")
            }
        }
        while true {
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            if error == SSL_ERROR_WANT_READ {
                try HTTPClient.wait(socket, for: Int16(POLLIN), deadline: deadline, doing: "making the TLS handshake with \(host)")
                continue
            }
            if error == SSL_ERROR_WANT_WRITE {
                try HTTPClient.wait(socket, for: Int16(POLLOUT), deadline: deadline, doing: "making the TLS handshake with \(host)")
                continue
            }
            let verification = SSL_get_verify_result(ssl)
            if verification != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verification))
                ERR_clear_error()
                throw HTTPClientError(
                    .certificateRejected, "the certificate of \(host) was refused: \(reason) (X509 error \(verification))")
            }
            throw HTTPClientError(.tlsFailure, "the TLS handshake with \(host) failed: \(OpenSSLError.drain())")
        }
    }

    deinit {
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        SSL_free(ssl)
    }

    func write(_ bytes: [UInt8]) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            try deadline.check(doing: "sending the request")
            let result = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, Int32(bytes.count - offset)) }
            if result > 0 {
                offset += Int(result)
                continue
            }
            try handle(result, doing: "sending the request")
        }
    }

    func read(into buffer: inout [UInt8]) throws(HTTPClientError) -> Int {
        while true {
            try deadline.check(doing: "receiving the response")
            let result = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress!, Int32($0.count)) }
            if result > 0 { return Int(result) }
            let error = SSL_get_error(ssl, result)
            if error == SSL_ERROR_ZERO_RETURN { return 0 }
            if error == SSL_ERROR_SYSCALL && errno == 0 { return 0 }
            if error == SSL_ERROR_SSL {
                // OpenSSL 3 reports a close without close_notify this way; the HTTP framing decides.
                let code = ERR_peek_error()
                if ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING {
                    ERR_clear_error()
                    return 0
                }
            }
            try handle(result, doing: "waiting for the response")
        }
    }

    private func handle(_ result: Int32, doing what: String) throws(HTTPClientError) {
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ: try HTTPClient.wait(socket, for: Int16(POLLIN), deadline: deadline, doing: what)
        case SSL_ERROR_WANT_WRITE: try HTTPClient.wait(socket, for: Int16(POLLOUT), deadline: deadline, doing: what)
        default: throw HTTPClientError(.tlsFailure, "TLS failed while \(what): \(OpenSSLError.drain())")
        }
    }
}
