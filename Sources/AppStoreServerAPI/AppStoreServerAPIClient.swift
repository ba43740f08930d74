public import JSONAndBase64
import Foundation

/// A client of the App Store Server API: every request carries a fresh bearer token,
/// `429` is retried after `Retry-After` (at most ``maximumRetries`` times), and any other
/// failure is an ``APIError`` carrying Apple's `errorCode` and `errorMessage`.
///
/// ```swift
/// let client = AppStoreServerAPIClient(signer: signer, baseURL: AppStoreServerAPIConfiguration.sandboxURL,
///                                      transport: try HTTPClient())
/// let page = try client.send(.transactionHistory(transactionId: "2000000123", revision: nil))
/// ```
///
/// Synchronous: call it from a thread that may block (the command line, a worker thread).
public final class AppStoreServerAPIClient: Sendable {
    public let signer: AppStoreSigner
    public let baseURL: URL
    let transport: any HTTPTransport
    let clock: @Sendable () -> Int64
    let sleep: @Sendable (Double) -> Void
    /// The client a request goes to again when this one answers ``transactionIdNotFound``
    /// (Production's client, with Sandbox accepted too: App Review's purchases are Sandbox's).
    public let sandboxFallback: AppStoreServerAPIClient?

    /// Apple's TransactionIdNotFoundError: the only error asked again of ``sandboxFallback``.
    public static let transactionIdNotFound: Int64 = 4_040_010

    /// How many times a `429` is retried before the request fails.
    public static let maximumRetries = 3
    /// The longest `Retry-After` waited for, in seconds; a longer one fails the request at once.
    public static let maximumRetryDelay: Double = 300
    /// The `User-Agent` of every request.
    public static let userAgent = "entitlements-engine"

    /// - Parameters:
    ///   - clock: now, in seconds since 1970 (for `iat`); the system clock by default.
    ///   - sleep: waits the given seconds before a retry; tests pass one that does not wait.
    public init(
        signer: AppStoreSigner, baseURL: URL, transport: any HTTPTransport,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        sleep: @escaping @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) },
        sandboxFallback: AppStoreServerAPIClient? = nil
    ) {
        self.signer = signer
        self.baseURL = baseURL
        self.transport = transport
        self.clock = clock
        self.sleep = sleep
        self.sandboxFallback = sandboxFallback
    }

    /// Sends `request` (retrying `429`) and decodes the JSON answer; an answer `4040010`
    /// (transaction id not found) is asked again of ``sandboxFallback`` when there is one,
    /// and its answer (or error) is the result.
    /// - Throws: ``APIError`` for an error status (with Apple's `errorCode`), a transport
    ///   failure, or a success whose body is not JSON.
    public func send(_ request: APIRequest) throws(APIError) -> APIResponse {
        do {
            return try sendHere(request)
        } catch {
            guard error.apiErrorCode == Self.transactionIdNotFound, let sandboxFallback else { throw error }
            var response = try sandboxFallback.send(request)
            response.answeredBySandboxFallback = true
            return response
        }
    }

    /// ``send(_:)`` to ``baseURL`` only.
    func sendHere(_ request: APIRequest) throws(APIError) -> APIResponse {
        var retries = 0
        while true {
            let response: HTTPResponse
            do {
                response = try transport.send(httpRequest(request))
            } catch {
                throw APIError(code: .init(rawValue: error.code.rawValue), request: request.description, status: nil, message: error.message)
            }
            if (200..<300).contains(response.status) {
                let json: JSONValue?
                if response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                    json = nil
                } else {
                    do { json = try JSONParser().parse(response.body) } catch {
                        throw APIError(
                            code: .malformedResponse, request: request.description, status: response.status,
                            message: "Apple answered \(response.status) with a body that is not JSON: \(error.description)")
                    }
                }
                return APIResponse(status: response.status, json: json, retries: retries)
            }
            var error = APIError(response: response, request: request.description)
            if response.status == 429 {
                let delay = Self.retryDelay(response.header("Retry-After"), nowMilliseconds: clock() * 1000)
                if retries < Self.maximumRetries && delay <= Self.maximumRetryDelay {
                    retries += 1
                    sleep(delay)
                    continue
                }
                error.message +=
                    retries < Self.maximumRetries
                    ? " (Retry-After asks for \(Int(delay)) s, more than the \(Int(Self.maximumRetryDelay)) s this command waits: run it again later)"
                    : " (still rate-limited after \(retries) retries: run it again later)"
            }
            throw error
        }
    }

    /// The HTTP request for `request`, with a fresh bearer token.
    func httpRequest(_ request: APIRequest) -> HTTPRequest {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        var headers: [(name: String, value: String)] = [
            ("User-Agent", Self.userAgent),
            ("Authorization", "Bearer " + signer.apiToken(issuedAt: clock())),
            ("Accept", "application/json"),
        ]
        var body: [UInt8] = []
        if let json = request.body {
            body = JSONWriter.bytes(json)
            headers.append(("Content-Type", "application/json"))
        }
        return HTTPRequest(method: request.method, url: URL(string: base + request.target)!, headers: headers, body: body)
    }

    /// Seconds to wait for a `Retry-After` value: delta seconds (RFC 9110), or a time —
    /// UNIX milliseconds (as Apple documents for the App Store Server API) or seconds;
    /// 1 s when absent or unreadable.
    static func retryDelay(_ value: String?, nowMilliseconds: Int64) -> Double {
        guard let text = value?.trimmingCharacters(in: .whitespaces), let number = Int64(text), number >= 0 else { return 1 }
        if number >= 100_000_000_000 { return max(0, Double(number - nowMilliseconds) / 1000) }
        if number >= 1_000_000_000 { return max(0, Double(number * 1000 - nowMilliseconds) / 1000) }
        return Double(number)
    }
}

/// A successful answer.
public struct APIResponse: Sendable {
    public var status: Int
    /// The decoded body; `nil` when it was empty (Set App Account Token answers so).
    public var json: JSONValue?
    /// How many `429` answers were retried before this one.
    public var retries: Int
    /// Whether Sandbox answered, asked again after Production's `4040010`
    /// (``AppStoreServerAPIClient/sandboxFallback``).
    public var answeredBySandboxFallback = false
}

/// A request the App Store Server API did not answer with success.
public struct APIError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Apple answered with an error status (see ``APIError/status``, ``APIError/apiErrorCode``).
        public static let apiError = Code(rawValue: "API_ERROR")
        /// Apple refused the bearer token (`401`).
        public static let unauthorized = Code(rawValue: "API_UNAUTHORIZED")
        /// Still `429` after the retries.
        public static let rateLimited = Code(rawValue: "API_RATE_LIMITED")
        /// A success status whose body is not JSON.
        public static let malformedResponse = Code(rawValue: "API_MALFORMED_RESPONSE")
        /// A paged answer that would never end: a `paginationToken` given twice, a `revision`
        /// that does not advance while `hasMore`, or more pages than `appStoreServerAPI.maxPages`.
        public static let paginationLoop = Code(rawValue: "PAGINATION_LOOP")
        /// A request outside Apple's documented limits (an extension of more than 90 days), not sent.
        public static let invalidRequest = Code(rawValue: "INVALID_REQUEST")
        // Transport failures keep ``HTTPClientError``'s codes: CONNECTION_FAILED,
        // TLS_CERTIFICATE_REJECTED, TLS_FAILURE, TIMEOUT, HTTP_PROTOCOL_ERROR.
        public var description: String { rawValue }
    }

    public var code: Code
    /// `METHOD /path?query` of the failed request.
    public var request: String
    /// The HTTP status, `nil` when there was no answer.
    public var status: Int?
    /// Apple's numeric `errorCode` (e.g. 4040010 TransactionIdNotFoundError), when the body had one.
    public var apiErrorCode: Int64?
    /// Apple's `errorMessage`, when the body had one.
    public var apiErrorMessage: String?
    /// What went wrong, for a person.
    public var message: String

    public init(code: Code, request: String, status: Int?, apiErrorCode: Int64? = nil, apiErrorMessage: String? = nil, message: String) {
        self.code = code
        self.request = request
        self.status = status
        self.apiErrorCode = apiErrorCode
        self.apiErrorMessage = apiErrorMessage
        self.message = message
    }

    /// The error an error status means, with Apple's error body when there is one.
    init(response: HTTPResponse, request: String) {
        var errorCode: Int64? = nil
        var errorMessage: String? = nil
        if let json = try? JSONParser().parse(response.body) {
            if case .int(let code)? = json["errorCode"] { errorCode = code }
            if case .string(let text)? = json["errorMessage"] { errorMessage = text }
        }
        let code: Code
        var message: String
        switch response.status {
        case 401:
            code = .unauthorized
            message = "Apple refused the bearer token (401): check appStoreServerAPI.issuerId and keyId, that the key file is the In-App Purchase key of that keyId, bundleId, and this machine's clock"
        case 429:
            code = .rateLimited
            message = "rate limit exceeded (429)"
        default:
            code = .apiError
            message = "Apple answered \(response.status)"
        }
        if let errorCode { message += ": errorCode \(errorCode)" }
        if let errorMessage { message += (errorCode == nil ? ": " : " ") + errorMessage }
        self.init(
            code: code, request: request, status: response.status, apiErrorCode: errorCode, apiErrorMessage: errorMessage, message: message)
    }

    /// The line the commands print: `{"request", "status", "errorCode", "errorMessage", "error": {"code", "message"}}`.
    public func json() -> JSONValue {
        [
            "request": .string(request),
            "status": status.map { .int(Int64($0)) } ?? .null,
            "errorCode": apiErrorCode.map { .int($0) } ?? .null,
            "errorMessage": apiErrorMessage.map { .string($0) } ?? .null,
            "error": ["code": .string(code.rawValue), "message": .string(message)],
        ]
    }

    public var description: String { "\(code.rawValue): \(request): \(message)" }
}
