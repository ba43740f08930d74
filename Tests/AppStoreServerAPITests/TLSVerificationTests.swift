import AppStoreServerAPI
import Entitlements
internal import CLibSSL
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A TLS server on 127.0.0.1 for tests (libssl), presenting a given certificate; answers
/// every request that completes a handshake with `200 {}`.
final class LocalTLSServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let context: OpaquePointer
    private let stopping = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)

    init(certificateChain: String, key: String) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw MockError("SSL_CTX_new") }
        guard SSL_CTX_use_certificate_chain_file(context, certificateChain) == 1,
            SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1
        else {
            SSL_CTX_free(context)
            throw MockError("cannot load \(certificateChain) / \(key)")
        }
        self.context = context
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 8) == 0 else { throw MockError("bind/listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    func stop() {
        stopping.withLock { $0 = true }
        _ = finished.wait(timeout: .now() + 30)
        close(listener)
        SSL_CTX_free(context)
    }

    private func serve() {
        defer { finished.signal() }
        while !stopping.withLock({ $0 }) {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if let ssl = SSL_new(context) {
                SSL_set_fd(ssl, connection)
                if SSL_accept(ssl) == 1 {
                    var received: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                        let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
                        guard count > 0 else { break }
                        received.append(contentsOf: buffer[0..<Int(count)])
                    }
                    let response = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".utf8)
                    _ = response.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
                    SSL_shutdown(ssl)
                }
                SSL_free(ssl)
                ERR_clear_error()
            }
            close(connection)
        }
    }
}

/// Certificate and host name verification of the HTTPS client: a server whose certificate
/// names another host is refused, as is one no trusted CA issued.
@Suite struct TLSVerificationTests {
    /// A CA, a certificate for `wrong.example` and one for `localhost` / 127.0.0.1, made by `openssl`.
    static let pki: URL = {
        let folder = Tool.folder("tls")
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        _ = try? Tool.openssl(
            ["req", "-x509"] + p256 + ["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Test TLS CA", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"], in: folder)
        for (name, names) in [("wrong", "DNS:wrong.example"), ("right", "DNS:localhost,IP:127.0.0.1")] {
            try? Data("subjectAltName=\(names)\nextendedKeyUsage=serverAuth\n".utf8).write(to: folder.appendingPathComponent("\(name).ext"))
            _ = try? Tool.openssl(["req"] + p256 + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"], in: folder)
            _ = try? Tool.openssl(
                ["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                 "-extfile", "\(name).ext", "-out", "\(name).pem"], in: folder)
        }
        return folder
    }()

    func server(_ name: String) throws -> LocalTLSServer {
        try LocalTLSServer(
            certificateChain: Self.pki.appendingPathComponent("\(name).pem").path, key: Self.pki.appendingPathComponent("\(name).key").path)
    }

    func client(trustingTestCA: Bool = true) throws -> HTTPClient {
        var options = HTTPClient.Options()
        options.timeout = 20
        if trustingTestCA { options.trustedCertificatesFile = Self.pki.appendingPathComponent("ca.pem").path }
        return try HTTPClient(options: options)
    }

    func get(_ url: String, with client: HTTPClient) -> Result<HTTPResponse, HTTPClientError> {
        do { return .success(try client.send(HTTPRequest(method: "GET", url: URL(string: url)!))) } catch { return .failure(error) }
    }

    @Test func aCertificateForTheRightNameIsAccepted() throws {
        let server = try server("right")
        defer { server.stop() }
        let client = try client()
        for host in ["localhost", "127.0.0.1"] {
            guard case .success(let response) = get("https://\(host):\(server.port)/inApps/v1/x", with: client) else {
                Issue.record("https://\(host) with a certificate naming it must be accepted: \(get("https://\(host):\(server.port)/", with: client))")
                continue
            }
            #expect(response.status == 200)
            #expect(response.body == Array("{}".utf8))
        }
    }

    @Test func aCertificateForAnotherHostNameIsRefused() throws {
        let server = try server("wrong")
        defer { server.stop() }
        let client = try client()
        guard case .failure(let error) = get("https://localhost:\(server.port)/", with: client) else {
            Issue.record("a certificate for wrong.example must not be accepted for localhost")
            return
        }
        #expect(error.code == .certificateRejected)
        #expect(error.message.contains("hostname mismatch"), "\(error.message)")
        guard case .failure(let byAddress) = get("https://127.0.0.1:\(server.port)/", with: client) else {
            Issue.record("a certificate without the IP address must not be accepted for 127.0.0.1")
            return
        }
        #expect(byAddress.code == .certificateRejected)
        #expect(byAddress.message.contains("IP address mismatch"), "\(byAddress.message)")
    }

    @Test func aCertificateFromAnUntrustedCAIsRefused() throws {
        let server = try server("right")
        defer { server.stop() }
        guard case .failure(let error) = get("https://localhost:\(server.port)/", with: try client(trustingTestCA: false)) else {
            Issue.record("a certificate from a CA outside the system trust store must be refused")
            return
        }
        #expect(error.code == .certificateRejected)
        #expect(error.message.contains("local issuer"), "\(error.message)")
    }

    /// A server that accepts the connection and never answers: a timeout, not a hang.
    @Test func aSilentServerTimesOut() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 4)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        var options = HTTPClient.Options()
        options.timeout = 1
        let client = try HTTPClient(options: options)
        let started = Date()
        for scheme in ["http", "https"] {
            guard case .failure(let error) = get("\(scheme)://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/", with: client) else {
                Issue.record("a silent server cannot answer")
                continue
            }
            #expect(error.code == .timeout)
        }
        #expect(Date().timeIntervalSince(started) < 60)
    }

    @Test func plainHTTPGoesOnlyToLoopback() throws {
        let folder = Tool.folder("loopback")
        let config = try Tool.writeConfig(in: folder, keyPath: "k.p8", baseURL: "http://api.example.com")
        #expect(throws: (any Error).self) { _ = try EngineConfiguration.load(path: config) }
        let loopback = try Tool.writeConfig(in: folder, keyPath: "k.p8", baseURL: "http://127.0.0.1:9900")
        #expect(throws: Never.self) { _ = try EngineConfiguration.load(path: loopback) }
    }
}
