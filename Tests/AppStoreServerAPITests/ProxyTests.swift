@testable import AppStoreServerAPI
import Entitlements
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP CONNECT proxy on 127.0.0.1 for tests: records each CONNECT head; answers
/// `refuse` when set, else `200` and tunnels the bytes both ways to 127.0.0.1:`target`
/// (whatever host the CONNECT names), one connection at a time.
final class LoopbackConnectProxy: @unchecked Sendable {
    let port: UInt16
    var url: String { "http://127.0.0.1:\(port)" }
    private let listener: Int32
    private let target: UInt16
    private let refuse: String?
    /// What the proxy answers CONNECT with instead of a status line, when set: `.silence`
    /// (nothing, until the client closes) or `.endlessHead` (header lines past any bound).
    enum Misbehaviour { case silence, endlessHead }
    private let misbehaviour: Misbehaviour?
    private let state = Mutex<(heads: [String], stopping: Bool)>(([], false))
    private let finished = DispatchSemaphore(value: 0)

    init(target: UInt16, refuse: String? = nil, misbehaviour: Misbehaviour? = nil) throws {
        self.target = target
        self.refuse = refuse
        self.misbehaviour = misbehaviour
        (listener, port) = try LoopbackListener.open()
        let thread = Thread { [self] in serve() }
        thread.name = "test-connect-proxy"
        thread.start()
    }

    /// The heads of the CONNECT requests received.
    var heads: [String] { state.withLock { $0.heads } }

    func stop() {
        state.withLock { $0.stopping = true }
        _ = finished.wait(timeout: .now() + 30)
        close(listener)
    }

    private func serve() {
        defer { finished.signal() }
        LoopbackListener.serveOneAtATime(listener, while: { !state.withLock { $0.stopping } }, handle: handle)
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    private func handle(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress!, $0.count, 0) }
            guard count > 0, received.count < 65_536 else { return }
            received.append(contentsOf: buffer[0..<count])
        }
        state.withLock { $0.heads.append(String(decoding: received, as: UTF8.self)) }
        switch misbehaviour {
        case .silence?:
            // Until the client gives up and closes (or 10 s).
            while buffer.withUnsafeMutableBytes({ recv(client, $0.baseAddress!, $0.count, 0) }) > 0 {}
            return
        case .endlessHead?:
            var head = "HTTP/1.1 200 Connection established\r\n"
            for index in 0..<2_000 { head += "X-Filler-\(index): \(String(repeating: "x", count: 40))\r\n" }
            _ = writeAll(client, Array(head.utf8))
            return
        case nil: break
        }
        if let refuse {
            _ = writeAll(client, Array("HTTP/1.1 \(refuse)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = target.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0, writeAll(client, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) else { return }
        // Both directions until either side closes (or 10 s of silence).
        var descriptors = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        while poll(&descriptors, 2, 10_000) > 0 {
            for (index, from) in [client, upstream].enumerated() where descriptors[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress!, $0.count, 0) }
                guard count > 0, writeAll(from == client ? upstream : client, Array(buffer[0..<count])) else { return }
            }
        }
    }
}

/// HTTPS through an HTTP CONNECT proxy: the tunnel, TLS to the real host through it, a
/// refusing proxy, and the hosts that do not use it.
@Suite struct ProxyTests {
    func client(proxy: String?, noProxy: [String] = []) throws -> HTTPClient {
        var options = HTTPClient.Options()
        options.timeout = 20
        options.trustedCertificatesFile = TLSVerificationTests.pki.appendingPathComponent("ca.pem").path
        options.proxy = proxy.flatMap(HTTPClient.proxyURL)
        options.noProxy = noProxy
        return try HTTPClient(options: options)
    }

    func tlsServer(_ name: String) throws -> LocalTLSServer {
        try LocalTLSServer(
            certificateChain: TLSVerificationTests.pki.appendingPathComponent("\(name).pem").path,
            key: TLSVerificationTests.pki.appendingPathComponent("\(name).key").path)
    }

    @Test func httpsGoesThroughTheTunnelWithTheRealHostVerified() throws {
        // The certificate names wrong.example: the proxy reaches it, the client never resolves it.
        let server = try tlsServer("wrong")
        defer { server.stop() }
        let proxy = try LoopbackConnectProxy(target: server.port)
        defer { proxy.stop() }
        let response = try client(proxy: proxy.url).send(HTTPRequest(method: "GET", url: URL(string: "https://wrong.example/inApps/v1/x")!))
        #expect(response.status == 200)
        #expect(response.body == Array("{}".utf8))
        let head = try #require(proxy.heads.first)
        #expect(head.hasPrefix("CONNECT wrong.example:443 HTTP/1.1\r\n"))
        #expect(head.contains("\r\nHost: wrong.example:443\r\n"))
        #expect(proxy.heads.count == 1)
    }

    @Test func theRealHostNameIsStillVerifiedThroughTheTunnel() throws {
        let server = try tlsServer("wrong")
        defer { server.stop() }
        let proxy = try LoopbackConnectProxy(target: server.port)
        defer { proxy.stop() }
        let client = try client(proxy: proxy.url)
        do {
            _ = try client.send(HTTPRequest(method: "GET", url: URL(string: "https://other.example/")!))
            Issue.record("a certificate for wrong.example must not be accepted for other.example")
        } catch {
            #expect(error.code == .certificateRejected)
        }
    }

    @Test(arguments: ["403 Forbidden", "407 Proxy Authentication Required"])
    func aProxyThatRefusesConnectIsProxyRefused(_ status: String) throws {
        let proxy = try LoopbackConnectProxy(target: 9, refuse: status)
        defer { proxy.stop() }
        let client = try client(proxy: proxy.url)
        do {
            _ = try client.send(HTTPRequest(method: "GET", url: URL(string: "https://api.storekit.apple.com/x")!))
            Issue.record("a refused CONNECT must fail the request")
        } catch {
            #expect(error.code == .proxyRefused)
            #expect(error.code.rawValue == "PROXY_REFUSED")
            #expect(error.message.contains("127.0.0.1:\(proxy.port)"))
            #expect(error.message.contains(String(status.prefix(3))))
        }
        #expect(proxy.heads.first?.hasPrefix("CONNECT api.storekit.apple.com:443 HTTP/1.1\r\n") == true)
    }

    @Test func aProxyThatNeverAnswersTimesOutWithinTheExchangesDeadline() throws {
        let proxy = try LoopbackConnectProxy(target: 9, misbehaviour: .silence)
        defer { proxy.stop() }
        var options = HTTPClient.Options()
        options.timeout = 1
        options.proxy = HTTPClient.proxyURL(proxy.url)
        let client = try HTTPClient(options: options)
        let started = Date()
        do {
            _ = try client.send(HTTPRequest(method: "GET", url: URL(string: "https://api.storekit.apple.com/x")!))
            Issue.record("a proxy that never answers must time out")
        } catch {
            #expect(error.code == .timeout)
        }
        #expect(Date().timeIntervalSince(started) < 9, "the deadline, not the proxy's 10 s, ends it")
    }

    @Test func aProxyAnswerHeadPastItsBoundIsAProtocolError() throws {
        let proxy = try LoopbackConnectProxy(target: 9, misbehaviour: .endlessHead)
        defer { proxy.stop() }
        let client = try client(proxy: proxy.url)
        do {
            _ = try client.send(HTTPRequest(method: "GET", url: URL(string: "https://api.storekit.apple.com/x")!))
            Issue.record("an answer head past 16 KiB must fail the request")
        } catch {
            #expect(error.code == .protocolError)
            #expect(error.message.contains(String(HTTPClient.maximumProxyHeadBytes)))
        }
    }

    @Test func loopbackHostsNeverUseTheProxy() throws {
        let server = try tlsServer("right")
        defer { server.stop() }
        let proxy = try LoopbackConnectProxy(target: 9, refuse: "403 Forbidden")
        defer { proxy.stop() }
        let response = try client(proxy: proxy.url).send(HTTPRequest(method: "GET", url: URL(string: "https://127.0.0.1:\(server.port)/")!))
        #expect(response.status == 200)
        #expect(proxy.heads.isEmpty)
    }

    @Test func noProxyNamesHostsAndDomainSuffixes() {
        #expect(HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: []))
        #expect(!HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: ["apple.com"]))
        #expect(!HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: [".apple.com"]))
        #expect(!HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: ["example.com", " api.storekit.apple.com "]))
        #expect(!HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: ["*"]))
        #expect(HTTPClient.usesProxy(host: "api.storekit.apple.com", noProxy: ["le.com", "storekit"]))
        #expect(!HTTPClient.usesProxy(host: "127.0.0.1", noProxy: []))
        #expect(!HTTPClient.usesProxy(host: "::1", noProxy: []))
        let settings = HTTPClient.proxySettings(environment: ["https_proxy": "proxy.corp:3128", "no_proxy": "a.example, .b.example,,"])
        #expect(settings.proxy?.absoluteString == "http://proxy.corp:3128")
        #expect(settings.noProxy == ["a.example", ".b.example"])
        let upper = HTTPClient.proxySettings(environment: ["HTTPS_PROXY": "http://p:8080/", "https_proxy": "http://q:1", "NO_PROXY": "*"])
        #expect(upper.proxy?.absoluteString == "http://p:8080")
        #expect(upper.noProxy == ["*"])
        #expect(HTTPClient.proxySettings(environment: ["HTTPS_PROXY": "https://p:8080"]).invalid == "https://p:8080")
        #expect(HTTPClient.proxySettings(environment: [:]).proxy == nil)
    }

    @Test func aNoProxyHostDoesNotUseTheProxy() throws {
        let server = try tlsServer("right")
        defer { server.stop() }
        let proxy = try LoopbackConnectProxy(target: server.port, refuse: "403 Forbidden")
        defer { proxy.stop() }
        // localhost is loopback anyway; the host list is the unit test's: here the request reaches the server directly.
        let response = try client(proxy: proxy.url, noProxy: ["localhost"]).send(
            HTTPRequest(method: "GET", url: URL(string: "https://localhost:\(server.port)/")!))
        #expect(response.status == 200)
        #expect(proxy.heads.isEmpty)
    }

    /// `appStoreServerAPI.proxy` wins over `HTTPS_PROXY`; a refused CONNECT exits 1 naming the proxy.
    @Test func theCommandsReportProxyRefusedAndTheConfigurationWins() throws {
        let folder = Tool.folder("proxy")
        _ = try Tool.generateKey("SubscriptionKey.p8", in: folder)
        let proxy = try LoopbackConnectProxy(target: 9, refuse: "407 Proxy Authentication Required")
        defer { proxy.stop() }
        let config = try Tool.writeConfig(in: folder, keyPath: "SubscriptionKey.p8", baseURL: "https://api.example.com")
        let url = URL(fileURLWithPath: config)
        let text = try String(contentsOf: url, encoding: .utf8)
            .replacingOccurrences(of: #""baseURL":"#, with: #""proxy":"\#(proxy.url)","baseURL":"#)
        try Data(text.utf8).write(to: url)
        var environment = ProcessInfo.processInfo.environment
        environment["HTTPS_PROXY"] = "http://127.0.0.1:9"
        environment["NO_PROXY"] = "other.example"
        let run = try Tool.run(
            Tool.binary, ["sync", "--config", config, "--customer", "2000000000000001"],
            in: folder, environment: environment)
        #expect(run.status == 1, "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("PROXY_REFUSED"), "\(run.stderr)")
        #expect(run.stderr.contains("127.0.0.1:\(proxy.port)"))
        #expect(run.stderr.contains("407"))
        #expect(proxy.heads.count == 1)

        let badProxy = text.replacingOccurrences(of: proxy.url, with: "https://proxy.example.com")
        try Data(badProxy.utf8).write(to: url)
        #expect(throws: ConfigurationError.self) { try EngineConfiguration.load(path: config) }
    }

    /// Send Consumption Information goes through the proxy too.
    @Test func consumptionSendUsesTheProxy() throws {
        let fixture = try SyncFixture()
        try ConsumptionSendTests().prepare(fixture)
        let proxy = try LoopbackConnectProxy(target: 9, refuse: "403 Forbidden")
        defer { proxy.stop() }
        try SyncPagingTests.setAPIField("baseURL", "https://api.example.com", in: fixture)
        try SyncPagingTests.setAPIField("proxy", .string(proxy.url), in: fixture)
        let send = try Tool.entitlements(
            ["consumption", "--config", fixture.configPath, "--transaction-id", ConsumptionSendTests.transactionId, "--send"], in: fixture.folder)
        #expect(send.status == 1, "\(send.stdout) \(send.stderr)")
        #expect((send.stdout + send.stderr).contains("PROXY_REFUSED"), "\(send.stdout) \(send.stderr)")
        #expect(proxy.heads.first?.hasPrefix("CONNECT api.example.com:443 HTTP/1.1\r\n") == true)
        #expect(fixture.mock.requests.isEmpty)
    }
}
