internal import COpenSSL
import EntitlementCore
import Foundation
import TestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A request the mock received.
struct MockRequest: Sendable {
    var method: String
    var path: String
    var query: [String: String]
    var headers: [String: String]
    var body: [UInt8]
    /// Why the bearer token was refused, `nil` when it was good.
    var tokenProblem: String?

    var json: JSONValue? { try? JSONParser().parse(body) }
}

/// What the mock answers.
struct MockResponse: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8] = []

    static func json(_ value: JSONValue, status: Int = 200, headers: [(String, String)] = []) -> MockResponse {
        MockResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: JSONWriter.bytes(value))
    }

    /// Apple's error body.
    static func error(_ status: Int, code: Int64, message: String, headers: [(String, String)] = []) -> MockResponse {
        json(["errorCode": .int(code), "errorMessage": .string(message)], status: status, headers: headers)
    }
}

/// A stand-in for the App Store Server API on 127.0.0.1 (an ephemeral port), for tests: a
/// minimal HTTP/1.1 server on POSIX sockets, one connection at a time (`Connection: close`).
///
/// Every request's bearer token is checked as Apple checks it: an ES256 JWS whose header is
/// `{"alg":"ES256","kid":<keyId>,"typ":"JWT"}` and whose signature verifies (OpenSSL's
/// `EVP_DigestVerify`) with the configured public key, with `aud` `appstoreconnect-v1`, `bid`,
/// `iss`, and `exp` after now and within 5 minutes of `iat`. A refused token is answered
/// `401` (and recorded). Anything else goes to `handler`.
final class MockAppStoreAPI: @unchecked Sendable {
    let port: UInt16
    var baseURL: String { "http://127.0.0.1:\(port)" }

    private let listener: Int32
    private let publicKey: OpaquePointer
    private let keyId: String
    private let issuerId: String
    private let bundleId: String
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var requests: [MockRequest] = []
        var handler: @Sendable (MockRequest) -> MockResponse = { _ in MockResponse(status: 404) }
        var stopping = false
    }

    /// - Parameter publicKeyPEM: the public half of the key the client signs with.
    init(publicKeyPEM: String, keyId: String, issuerId: String, bundleId: String) throws {
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        let pem = Array(publicKeyPEM.utf8)
        guard let key = pem.withUnsafeBytes({ raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }) else { throw MockError("the public key PEM does not parse") }
        publicKey = key

        (listener, port) = try LoopbackListener.open()
        let thread = Thread { [self] in serve() }
        thread.name = "mock-app-store-api"
        thread.start()
    }

    deinit {
        EVP_PKEY_free(publicKey)
    }

    /// Sets what the mock answers to requests whose token is good.
    func handle(_ handler: @escaping @Sendable (MockRequest) -> MockResponse) {
        state.withLock { $0.handler = handler }
    }

    /// Every request received so far, in order.
    var requests: [MockRequest] { state.withLock { $0.requests } }

    /// Stops accepting and waits (bounded) for the serving thread to end.
    func stop() {
        state.withLock { $0.stopping = true }
        _ = finished.wait(timeout: .now() + 30)
        close(listener)
    }

    // MARK: Serving

    private func serve() {
        defer { finished.signal() }
        LoopbackListener.serveOneAtATime(listener, while: { !state.withLock { $0.stopping } }, handle: handleConnection)
    }

    private func handleConnection(_ fd: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var headerEnd: Int? = nil
        var contentLength = 0
        while true {
            if let end = headerEnd, received.count >= end + 4 + contentLength { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            guard count > 0 else { return }
            received.append(contentsOf: buffer[0..<count])
            if headerEnd == nil, let end = Self.find(received) {
                headerEnd = end
                let head = String(decoding: received[0..<end], as: UTF8.self)
                for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if received.count > 1 << 20 { return }
        }
        guard let end = headerEnd else { return }
        var lines = String(decoding: received[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = String(requestLine[1])
        let pathPart = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        var query: [String: String] = [:]
        if let question = target.firstIndex(of: "?") {
            for pair in target[target.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
        }
        var request = MockRequest(
            method: String(requestLine[0]), path: pathPart, query: query, headers: headers,
            body: Array(received[(end + 4)..<(end + 4 + contentLength)]))
        request.tokenProblem = checkToken(headers["authorization"])
        let response: MockResponse
        if let problem = request.tokenProblem {
            response = MockResponse(status: 401, body: Array("Unauthenticated: \(problem)".utf8))
        } else {
            let handler = state.withLock { $0.handler }
            response = handler(request)
        }
        state.withLock { $0.requests.append(request) }
        var head = "HTTP/1.1 \(response.status) Mock\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + response.body
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return }
            offset += written
        }
    }

    private static func find(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    // MARK: The bearer token

    /// Why `authorization` is not a token Apple would accept, or `nil`.
    func checkToken(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no Bearer token" }
        let token = String(authorization.dropFirst("Bearer ".count))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64.decodeURL(parts[0]), let payloadBytes = Base64.decodeURL(parts[1]),
            let signature = Base64.decodeURL(parts[2]), signature.count == 64
        else { return "not a compact JWS with a 64-byte signature" }
        let header = String(decoding: headerBytes, as: UTF8.self)
        guard header == #"{"alg":"ES256","kid":"\#(keyId)","typ":"JWT"}"# else { return "header \(header)" }
        guard verify(signingInput: Array((parts[0] + "." + parts[1]).utf8), raw: signature) else { return "the signature does not verify" }
        guard let claims = try? JSONParser().parse(payloadBytes) else { return "claims are not JSON" }
        guard claims["aud"] == "appstoreconnect-v1" else { return "aud \(String(describing: claims["aud"]))" }
        guard claims["bid"] == .string(bundleId) else { return "bid \(String(describing: claims["bid"]))" }
        guard claims["iss"] == .string(issuerId) else { return "iss \(String(describing: claims["iss"]))" }
        guard case .int(let iat)? = claims["iat"], case .int(let exp)? = claims["exp"] else { return "iat and exp must be integers" }
        let now = Int64(Date().timeIntervalSince1970)
        guard exp > iat, exp - iat <= 300 else { return "exp \(exp) is not within 5 minutes after iat \(iat)" }
        guard exp > now, iat <= now + 60 else { return "the token is expired or issued in the future (iat \(iat), exp \(exp), now \(now))" }
        return nil
    }

    private func verify(signingInput: [UInt8], raw: [UInt8]) -> Bool {
        let der = Tool.der(fromRaw: raw)
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, publicKey) == 1 else { return false }
        let ok = EVP_DigestVerify(context, der, der.count, signingInput, signingInput.count) == 1
        ERR_clear_error()
        return ok
    }
}

struct MockError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
