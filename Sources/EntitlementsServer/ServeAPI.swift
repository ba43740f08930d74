import Entitlements
import Foundation
import HTTPServer

/// The answers of specification section 9: routes, the bearer token, ingest
/// through the batcher, queries on the engine's reader connections.
final class ServeAPI: Sendable {
    let engine: Engine
    let token: String?
    /// `serve.adminToken`: who may act as an operator, and under which label.
    let adminTokens: [AdminToken]
    /// `serve.trustedProxies`: whose `X-Forwarded-For` names the client (loopback always).
    let trustedProxies: TrustedProxies
    let batcher: IngestBatcher
    /// `POST /notifications`: the bodies of concurrent requests verified in shared passes and committed together.
    let notifications: NotificationIngest
    let budget: QuarantineBudget
    /// Queries running at once: as many as the engine keeps reader connections, so none is opened per request.
    let queryGate: DispatchSemaphore
    /// Requests and ingests counted for `GET /metrics`.
    let counters = ServerMetrics()
    /// Look Up Order ID for `GET /customers?orderId=`: with `appStoreServerAPI` configured
    /// on an engine that writes; `nil` otherwise.
    let orders: AppStoreSync?

    init(
        engine: Engine, token: String?, adminTokens: [AdminToken] = [], trustedProxies: TrustedProxies = .loopbackOnly,
        bound: QuarantineBound
    ) {
        self.engine = engine
        self.trustedProxies = trustedProxies
        orders = engine.configuration.appStoreServerAPI == nil || engine.mode == .readOnly ? nil : try? AppStoreSync(engine: engine)
        self.token = token
        self.adminTokens = adminTokens
        budget = QuarantineBudget(bound: bound)
        batcher = IngestBatcher(engine: engine, budget: budget)
        notifications = NotificationIngest(
            engine: engine, batcher: batcher, budget: budget,
            otherwise: "POST /notifications takes Apple's notification body {\"signedPayload\": \"<JWS>\"}; send other signed data to POST /transactions")
        queryGate = DispatchSemaphore(value: max(2, ProcessInfo.processInfo.activeProcessorCount))
    }

    // MARK: Before the body

    /// The route, parsed once from the head; 404, 405 and 401 are answered from the
    /// head, before any body is read.
    func preflight(_ head: RequestHead, client: ClientInfo) -> HeadDecision<Route> {
        guard let route = Route(path: head.path) else {
            // A path that cannot be read is malformed, not unknown.
            if Route.percentDecoded(head.path) == nil {
                return .answer(
                    .error(400, code: "BAD_REQUEST", message: "the path holds a malformed percent-escape (%XX of UTF-8)\(echoedPath(head))"))
            }
            return .answer(.error(404, code: "NOT_FOUND", message: "no endpoint at this path\(echoedPath(head))"))
        }
        guard head.method == route.method else {
            var response = ServerResponse.error(
                405, code: "METHOD_NOT_ALLOWED", message: "this path takes \(route.method), not \(head.method)\(echoedPath(head))")
            // A GET route answers HEAD as well (without the body).
            response.fields.append(HTTPField(name: "Allow", value: route.method == "GET" ? "GET, HEAD" : route.method))
            return .answer(response)
        }
        if route.needsAdminToken { return adminPreflight(head, route: route) }
        if route.needsToken, let token, !Self.authorized(head.field("authorization"), token: token),
            adminLabel(head.field("authorization")) == nil
        {
            var response = ServerResponse.error(
                401, code: "UNAUTHORIZED", message: "this endpoint requires Authorization: Bearer <serve.token>")
            response.fields.append(HTTPField(name: "WWW-Authenticate", value: "Bearer"))
            return .answer(response)
        }
        return .proceed(route)
    }

    /// The request's path, for an error answer, to a caller who may read the API (no token is
    /// set, or it sent one that is): `": /the/path"`; else nothing, so that answers to callers
    /// without a token hold nothing of the request's making (specification section 18).
    private func echoedPath(_ head: RequestHead) -> String {
        if let token {
            let authorization = head.field("authorization")
            guard Self.authorized(authorization, token: token) || adminLabel(authorization) != nil else { return "" }
        }
        return ": \(head.path.prefix(200))"
    }

    /// `Bearer <token>`, the scheme case-insensitive, compared in constant time: spaces
    /// between the scheme and the token, spaces or tabs around both. Read as bytes (every
    /// request that needs the token asks).
    static func authorized(_ header: String?, token: String) -> Bool {
        guard var header else { return false }
        var token = token
        return header.withUTF8 { header in
            token.withUTF8 { expected in
                let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
                var start = header.startIndex
                var end = header.endIndex
                while start < end && blank(header[start]) { start += 1 }
                while end > start && blank(header[end - 1]) { end -= 1 }
                let scheme = bearerScheme
                guard end - start > scheme.count, header[start + scheme.count] == 0x20 else { return false }
                for offset in 0..<scheme.count where header[start + offset] | 0x20 != scheme[offset] { return false }
                var given = start + scheme.count
                while given < end && header[given] == 0x20 { given += 1 }
                let length = end - given
                var difference = UInt8(length == expected.count ? 0 : 1)
                for index in 0..<expected.count {
                    difference |= expected[index] ^ (index < length ? header[given + index] : 0)
                }
                return difference == 0
            }
        }
    }

    /// `bearer`, lowercase (an ASCII letter ORed with 0x20 is its lowercase).
    private static let bearerScheme: [UInt8] = Array("bearer".utf8)

    // MARK: Requests

    /// Answers a request whose head the preflight let through to `route`.
    func handle(_ request: ServerRequest, route: Route, client: ClientInfo) -> ServerResponse {
        switch route {
        case .notifications: return notification(request, client: client)
        case .transactions: return transactions(request, client: client)
        case .customer(let id): return customer(.appTransactionId(id), request)
        case .customerSearch: return customerSearch(request)
        case .history(let id): return history(id, request)
        case .changes: return feed(request) { (since, limit) throws(EngineError) in try engine.changes(since: since, limit: limit).map { $0.json() } }
        case .lifecycle: return feed(request) { (since, limit) throws(EngineError) in try engine.lifecycle(since: since, limit: limit).map { $0.json() } }
        case .health: return .json(200, Array(#"{"ok":true}"#.utf8))
        case .grants, .revokeGrant, .credits, .links, .appUser: return admin(request, route: route)
        case .webhooks: return webhooks(request)
        case .rejections: return rejections(request)
        case .dashboard(let name): return dashboard(name)
        case .metrics: return prometheus()
        case .metricsSummary: return metricsSummary(request)
        case .revenue: return revenue(request)
        }
    }

    static func json(_ status: Int, _ value: JSONValue) -> ServerResponse {
        .json(status, JSONWriter.bytes(value))
    }

    static func badRequest(_ message: String) -> ServerResponse {
        .error(400, code: "BAD_REQUEST", message: message)
    }

    /// A database that cannot be written or read: 503, so that Apple retries. The caller learns
    /// the code alone (no paths, no internals); the detail goes to standard error.
    static func unavailable(_ error: EngineError) -> ServerResponse {
        FileHandle.standardError.write(Data("entitlements serve: 503 \(error.code): \(error.message)\n".utf8))
        var response = ServerResponse.error(503, code: error.code.rawValue, message: "the database is unavailable; retry later")
        response.fields.append(HTTPField(name: "Retry-After", value: "60"))
        return response
    }

    // MARK: Ingest

    /// `POST /notifications`: Apple's body, one notification; the ingest line once committed.
    private func notification(_ request: ServerRequest, client: ClientInfo) -> ServerResponse {
        guard !request.body.isEmpty else { return Self.badRequest("the request has no body: expected {\"signedPayload\": \"<JWS>\"}") }
        let key = QuarantineBudget.clientKey(peer: client, forwardedFor: request.head.field("x-forwarded-for"), trusted: trustedProxies)
        switch notifications.ingest(InputBytes(bytes: request.body), client: key) {
        case .success(let line):
            counters.ingested([line])
            return Self.json(200, line.json())
        case .failure(let error): return Self.unavailable(error)
        }
    }

    /// `POST /transactions`: any input document, or NDJSON (one document per line, numbered as
    /// `ingest` numbers them, blank lines counted); a JSON array of result lines.
    private func transactions(_ request: ServerRequest, client: ClientInfo) -> ServerResponse {
        guard !request.body.isEmpty else { return Self.badRequest("the request has no body: expected an input document") }
        var items: [AppendItem] = []
        // Per input document in order: its number and how many items it holds (0: "empty").
        var documents: [(number: Int, count: Int)] = []
        for document in Self.documents(request.body) {
            let count = engine.documentVerifier.appendVerifiedItems(document, to: &items)
            documents.append((document.number ?? 1, count))
        }
        var results: [IngestResult] = []
        if !items.isEmpty {
            switch ingest(items, request: request, client: client) {
            case .success(let committed): results = committed
            case .failure(let error): return Self.unavailable(error)
            }
        }
        // An empty document's line is a result too.
        counters.ingested(results + documents.filter { $0.count == 0 }.map { IngestResult(outcome: .empty, input: $0.number) })
        var lines: [JSONValue] = []
        var next = results.makeIterator()
        for document in documents {
            if document.count == 0 { lines.append(IngestResult(outcome: .empty, input: document.number).json()) }
            for _ in 0..<document.count {
                guard var line = next.next() else { break }
                line.input = document.number
                lines.append(line.json())
            }
        }
        return Self.json(200, .array(lines))
    }

    /// The input documents of a `POST /transactions` body: the body whole when it holds one
    /// line, or one JSON document spanning lines; else each non-blank line, numbered from 1.
    static func documents(_ body: [UInt8]) -> [InputBytes] {
        var lines: [(number: Int, bytes: ArraySlice<UInt8>)] = []
        var number = 0
        for raw in body.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            let line = raw.last == 0x0D ? raw.dropLast() : raw
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            lines.append((number, line))
        }
        if lines.count <= 1 { return [InputBytes(bytes: body, number: 1)] }
        let start = body.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        if (try? JSONParser().parse(body[start...])) != nil { return [InputBytes(bytes: body, number: 1)] }
        return lines.map { InputBytes(bytes: Array($0.bytes), number: $0.number) }
    }

    /// Commits the items the quarantine bound lets through; the others are answered `rejected` without their bytes kept.
    private func ingest(_ items: [AppendItem], request: ServerRequest, client: ClientInfo) -> Result<[IngestResult], EngineError> {
        let key = QuarantineBudget.clientKey(peer: client, forwardedFor: request.head.field("x-forwarded-for"), trusted: trustedProxies)
        let now = Engine.now()
        var kept: [AppendItem] = []
        var results = [IngestResult?](repeating: nil, count: items.count)
        for (index, item) in items.enumerated() {
            if case .rejected(let rejection) = item, !budget.admit(rejection, client: key, now: now) {
                results[index] = IngestResult(outcome: .rejected, errorCode: rejection.code, errorMessage: rejection.message)
            } else {
                kept.append(item)
            }
        }
        if kept.count < items.count { batcher.nudge() }
        if !kept.isEmpty {
            switch batcher.commit(kept) {
            case .success(let committed):
                var next = committed.makeIterator()
                for index in results.indices where results[index] == nil { results[index] = next.next() }
            case .failure(let error):
                return .failure(error)
            }
        }
        // One document per request: every line is of input 1 (``transactions(_:client:)`` numbers NDJSON lines).
        return .success(results.map { result in
            var line = result!
            line.input = 1
            return line
        })
    }

    // MARK: Queries

    /// A request refused with this answer.
    struct Refusal: Error {
        var response: ServerResponse
    }

    /// `?at=`, when given: milliseconds since 1970 or an ISO 8601 UTC time, read as every command reads `--at`.
    static func at(_ parameters: [String: String]) -> Result<Int64?, Refusal> {
        guard let text = parameters["at"] else { return .success(nil) }
        do {
            return .success(try TimeArgument.parse(text))
        } catch {
            return .failure(Refusal(response: badRequest("at " + String(error.message.prefix(300)))))
        }
    }

    private func answer(_ query: CustomerQuery, at: Int64?) -> ServerResponse {
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let answer = try engine.query(query, at: at)
            if case .notFound = answer { return Self.json(404, answer.json()) }
            return .json(200, answer.jsonBytes())
        } catch {
            return Self.unavailable(error)
        }
    }

    /// `GET /customers/{appTransactionId}` (also `otid:...`), with optional `?at=MS`.
    private func customer(_ query: CustomerQuery, _ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "at" { return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected at)") }
        switch Self.at(parameters) {
        case .failure(let refusal): return refusal.response
        case .success(let at): return answer(query, at: at)
        }
    }

    /// `GET /customers?originalTransactionId=X` (or `transactionId`, `appAccountToken`), with optional `&at=MS`.
    private func customerSearch(_ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        let selectors = ["originalTransactionId", "transactionId", "appAccountToken", "orderId"]
        for name in parameters.keys where name != "at" && !selectors.contains(name) {
            return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected one of \(selectors.joined(separator: ", ")) and optionally at)")
        }
        let given = selectors.filter { parameters[$0] != nil }
        guard given.count == 1, let value = parameters[given[0]], !value.isEmpty else {
            return Self.badRequest("give exactly one of \(selectors.joined(separator: ", "))")
        }
        let at: Int64?
        switch Self.at(parameters) {
        case .failure(let refusal): return refusal.response
        case .success(let value): at = value
        }
        switch given[0] {
        case "originalTransactionId": return answer(.originalTransactionId(value), at: at)
        case "appAccountToken": return answer(.appAccountToken(value), at: at)
        case "orderId": return orderQuery(value, at: at)
        default: return transactionQuery(value, at: at)
        }
    }

    /// `GET /customers?orderId=O`: the order number from the customer's receipt email, looked
    /// up with Apple (Look Up Order ID), what it returns ingested, then that customer's view,
    /// as `lookup-order` prints it (specification section 17).
    private func orderQuery(_ orderId: String, at: Int64?) -> ServerResponse {
        guard let orders else {
            return .error(
                404, code: "NOT_FOUND",
                message: "an order id is looked up with Apple: this server has no appStoreServerAPI configured, or is a read replica")
        }
        let lookup = orders.lookUpOrder(orderId, at: at, page: { _ in })
        if let failure = lookup.outcome.failure {
            if case .engine(let error) = failure { return Self.unavailable(error) }
            return Self.json(502, failure.json())
        }
        guard let view = lookup.views.first else {
            return .error(404, code: "NOT_FOUND", message: "Apple knows no order \(orderId.prefix(64)) for this app")
        }
        return answer(.appTransactionId(view.appTransactionId), at: at)
    }

    /// `GET /customers?transactionId=T`.
    private func transactionQuery(_ transactionId: String, at: Int64?) -> ServerResponse {
        answer(.transactionId(transactionId), at: at)
    }

    /// `GET /customers/{id}/history`, with optional `?until=` (default now): the history lines as a JSON array.
    private func history(_ id: String, _ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "until" { return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected until)") }
        var until: Int64? = nil
        if let text = parameters["until"] {
            do { until = try TimeArgument.parse(text) } catch { return Self.badRequest("until " + String(error.message.prefix(300))) }
        }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let answer = try engine.history(.appTransactionId(id), until: until)
            switch answer {
            case .lines: return Self.json(200, .array(answer.json()))
            case .notFound: return Self.json(404, answer.json()[0])
            }
        } catch {
            return Self.unavailable(error)
        }
    }

    /// `GET /changes?since=C&limit=N` and `GET /lifecycle?since=C&limit=N`: the changes feed
    /// (specification section 8) or the lifecycle feed (section 12) as NDJSON, what became due by now
    /// recorded first (by `read`). Without `limit`, at most 10,000 lines (ask again from the last cursor).
    private func feed(_ request: ServerRequest, read: (Int64, Int) throws(EngineError) -> [JSONValue]) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "since" && name != "limit" {
            return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected since, limit)")
        }
        var since: Int64 = 0
        if let text = parameters["since"] {
            guard let value = Int64(text), value >= 0 else { return Self.badRequest("since expects a cursor (a non-negative integer), got \"\(text.prefix(40))\"") }
            since = value
        }
        var limit = 10_000
        if let text = parameters["limit"] {
            guard let value = Int(text), value >= 1, value <= 100_000 else {
                return Self.badRequest("limit expects an integer from 1 to 100000, got \"\(text.prefix(40))\"")
            }
            limit = value
        }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let lines = try read(since, limit)
            var body: [UInt8] = []
            for line in lines {
                JSONWriter.write(line, into: &body)
                body.append(0x0A)
            }
            return ServerResponse(status: 200, fields: [HTTPField(name: "Content-Type", value: "application/x-ndjson")], body: body)
        } catch {
            return Self.unavailable(error)
        }
    }
}
