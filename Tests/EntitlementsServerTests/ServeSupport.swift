import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import HTTPServer
import Testing
import TestSupport
import TestPKI
#if canImport(Glibc)
import Glibc
#endif

/// A `Server` on a real engine, listening on 127.0.0.1 with an ephemeral port, run on a thread of its own.
final class TestServer: @unchecked Sendable {
    let workspace: Workspace
    let engine: Engine
    let server: Server
    let logURL: URL
    private let logFD: Int32
    private let done = DispatchSemaphore(value: 0)
    var port: Int { server.address.port }
    private(set) var runError: EngineError?

    init(
        name: String = "serve", token: String? = nil, adminTokens: [AdminToken] = [], maxInputBytes: Int? = nil,
        database: String = "serve.sqlite", trustedProxies: TrustedProxies = .loopbackOnly,
        workspace: Workspace? = nil, configure: (inout Server.Options) -> Void = { _ in }
    ) throws {
        self.workspace = try workspace ?? Workspace(name: name, maxInputBytes: maxInputBytes)
        engine = try self.workspace.engine(database)
        var options = Server.Options(maxBodyBytes: engine.configuration.maxInputBytes)
        configure(&options)
        logURL = self.workspace.url("access-\(UUID().uuidString.prefix(6)).log")
        logFD = open(logURL.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        var settings = ServeSettings(listen: ListenAddress(host: "127.0.0.1", port: 0), token: token)
        settings.adminTokens = adminTokens
        settings.trustedProxies = trustedProxies
        server = try Server(
            engine: engine, settings: settings, options: options,
            log: AccessLog(fileDescriptor: logFD))
        let thread = Thread { [self] in
            do throws(EngineError) { try server.run() } catch { runError = error }
            done.signal()
        }
        thread.start()
    }

    /// Stops the server and waits (bounded) for it to finish; `false` if it did not.
    @discardableResult
    func stop(timeout: Double = 60) -> Bool {
        if stopped { return true }
        server.stop()
        stopped = done.wait(timeout: .now() + timeout) == .success
        return stopped
    }
    private var stopped = false

    deinit {
        stop()
        close(logFD)
    }

    func exchange(_ method: String, _ target: String, body: String? = nil, headers: [String] = []) throws -> RawClient.Response {
        try RawClient.exchange(port: port, method, target, body: body, headers: headers)
    }

    /// The access log's lines so far.
    var logLines: [JSONValue] {
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONParser().parse(Array($0.utf8)) }
    }

    /// Waits (bounded) until `condition` holds, checking every few milliseconds.
    static func eventually(timeout: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(5_000)
        }
        return try condition()
    }
}

/// Signed App Store bodies for the serve tests.
enum ServeSamples {
    static let pki = Scenario.pki
    /// Another PKI: what it signs fails verification (`INVALID_CHAIN`).
    static let forger = TestPKI()

    /// Apple's notification body: a SUBSCRIBED notification for customer `n`.
    static func notification(_ n: Int, uuid: String? = nil, signer: TestPKI = pki) -> String {
        let transaction = TestPayloads.transaction(
            transactionId: "\(3_000_000_000_000_000 + n)", appTransactionId: "\(705_000_000_000_000_000 + n)",
            appAccountToken: "0d0a0000-0000-4000-8000-\(String(format: "%012d", n))")
        let payload = TestPayloads.notification(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid ?? "5e000000-0000-4000-8000-\(String(format: "%012d", n))",
            signedTransactionInfo: signer.sign(transaction))
        return #"{"signedPayload":""# + signer.sign(payload) + #""}"#
    }

    /// Apple's notification body, signed by the trusted PKI, about another environment (`INVALID_ENVIRONMENT`)
    /// or another app (`INVALID_APP_IDENTIFIER`).
    static func foreignNotification(_ n: Int, environment: String = "Production", bundleId: String = TestPayloads.bundleId) -> String {
        let payload = TestPayloads.notification(
            type: "TEST", uuid: "5f000000-0000-4000-8000-\(String(format: "%012d", n))", bundleId: bundleId, environment: environment)
        return #"{"signedPayload":""# + pki.sign(payload) + #""}"#
    }

    static func customer(_ n: Int) -> String { "\(705_000_000_000_000_000 + n)" }
    static func originalTransactionId(_ n: Int) -> String { "\(3_000_000_000_000_000 + n)" }
    static func accountToken(_ n: Int) -> String { "0d0a0000-0000-4000-8000-\(String(format: "%012d", n))" }
}

/// A value behind a lock, shareable by the threads of a test.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
