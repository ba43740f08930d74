import EntitlementCore
internal import EventStore
import Foundation

/// Brings what the App Store Server API holds into the engine (specification section 10):
/// Get Notification History for what Apple failed to deliver or a new deployment never
/// saw, and a customer's transaction history, subscription statuses and app transaction.
///
/// Every page is ingested, and committed, before the next is requested, through exactly
/// the verification of any other input, so a failure later keeps everything before it;
/// where to resume (the end of the last successful notification sync, the history
/// revision reached per customer) is kept in the database.
///
/// ```swift
/// let sync = try AppStoreSync(engine: engine)
/// let outcome = sync.notifications(start: nil, onlyFailures: true) { page in print(page.json()) }
/// ```
public final class AppStoreSync: Sendable {
    public let engine: Engine
    public let client: AppStoreServerAPIClient
    let clock: @Sendable () -> Int64
    /// The environment synced: which of Apple's hosts (without `baseURL`) and whose resume points.
    public let environment: AppStoreEnvironment

    /// Apple keeps notification history for 180 days.
    public static let historyWindow: Int64 = 180 * 24 * 60 * 60 * 1000
    /// The default start is this much inside the 180 days: the request reaches Apple a
    /// moment after it is made, and a start older than 180 days is refused
    /// (StartDateTooFarInPastError).
    public static let historyWindowMargin: Int64 = 60 * 1000

    /// - Parameters:
    ///   - engine: the engine that ingests what the API returns.
    ///   - client: the API client (``client(for:environment:transport:sleep:)``).
    ///   - environment: the environment `client` reaches; by default the configuration's first.
    ///   - clock: now, in milliseconds since 1970.
    public init(
        engine: Engine, client: AppStoreServerAPIClient, environment: AppStoreEnvironment? = nil,
        clock: @escaping @Sendable () -> Int64 = { Engine.now() }
    ) {
        self.engine = engine
        self.client = client
        self.environment = environment ?? engine.configuration.environment
        self.clock = clock
    }

    /// A sync for `engine`'s configuration, sending over HTTPS with libssl.
    /// - Throws: ``EngineError`` with `CONFIGURATION` (no `appStoreServerAPI` section, an
    ///   environment the API does not serve), a key error code (`KEY_NOT_FOUND`, ...) or an
    ///   HTTP client error code.
    /// - Parameters:
    ///   - engine: the engine that ingests what the API returns, and whose configuration names the key.
    ///   - environment: one of the configuration's environments (a production server
    ///     that also accepts Sandbox syncs each separately); by default the first.
    public convenience init(engine: Engine, environment: AppStoreEnvironment? = nil) throws(EngineError) {
        let configuration = engine.configuration
        let client = try Self.client(for: configuration, environment: environment, transport: nil)
        self.init(engine: engine, client: client, environment: environment)
    }

    /// The API client a configuration describes: its key, and `baseURL` or Apple's host for
    /// `environment` (by default the configuration's first).
    public static func client(
        for configuration: EngineConfiguration, environment: AppStoreEnvironment? = nil, transport: (any HTTPTransport)?,
        sleep: @escaping @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) }
    ) throws(EngineError) -> AppStoreServerAPIClient {
        let environment = environment ?? configuration.environment
        guard configuration.environments.contains(environment) else {
            throw EngineError(
                code: "CONFIGURATION",
                message: "\(environment.rawValue) is not one of the configuration's environments (\(configuration.environments.map(\.rawValue).joined(separator: ", ")))")
        }
        guard let api = configuration.appStoreServerAPI else {
            throw EngineError(
                code: "CONFIGURATION",
                message: "configuration field \"appStoreServerAPI\": required: {\"issuerId\", \"keyId\", \"privateKeyPath\"} of the In-App Purchase key")
        }
        let baseURL: URL
        if let configured = api.baseURL {
            baseURL = configured
        } else {
            switch environment {
            case .production: baseURL = AppStoreServerAPIConfiguration.productionURL
            case .sandbox: baseURL = AppStoreServerAPIConfiguration.sandboxURL
            case .xcode, .localTesting:
                throw EngineError(
                    code: "CONFIGURATION",
                    message: "the App Store Server API serves Production and Sandbox, not \(environment.rawValue); set appStoreServerAPI.baseURL to reach a local server")
            }
        }
        let signer: AppStoreSigner
        do { signer = try api.signer(bundleId: configuration.bundleId) } catch {
            throw EngineError(code: EngineError.Code(rawValue: error.code.rawValue), message: error.message)
        }
        let chosen: any HTTPTransport
        if let transport {
            chosen = transport
        } else {
            chosen = try httpClient(for: api)
        }
        // Production's 4040010 is asked again of Sandbox when Sandbox is accepted too (App Review's purchases).
        var fallback: AppStoreServerAPIClient? = nil
        if environment == .production && configuration.environments.contains(.sandbox) {
            fallback = AppStoreServerAPIClient(
                signer: signer, baseURL: api.sandboxBaseURL ?? AppStoreServerAPIConfiguration.sandboxURL, transport: chosen, sleep: sleep)
        }
        return AppStoreServerAPIClient(signer: signer, baseURL: baseURL, transport: chosen, sleep: sleep, sandboxFallback: fallback)
    }

    /// The HTTPS client of `api`: its `proxy`, else `HTTPS_PROXY` / `https_proxy`, with
    /// `NO_PROXY` / `no_proxy` honoured either way.
    /// - Throws: ``EngineError`` `CONFIGURATION` for an `HTTPS_PROXY` that is not a proxy URL,
    ///   or the HTTP client's code when the trust store cannot be loaded.
    public static func httpClient(
        for api: AppStoreServerAPIConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(EngineError) -> HTTPClient {
        let settings = HTTPClient.proxySettings(environment: environment)
        if api.proxy == nil, let invalid = settings.invalid {
            throw EngineError(code: "CONFIGURATION", message: "HTTPS_PROXY \"\(invalid)\" is not an HTTP CONNECT proxy URL such as \"http://proxy.example.com:3128\"")
        }
        var options = HTTPClient.Options()
        options.proxy = api.proxy ?? settings.proxy
        options.noProxy = settings.noProxy
        do { return try HTTPClient(options: options) } catch {
            throw EngineError(code: EngineError.Code(rawValue: error.code.rawValue), message: error.message)
        }
    }

    var environmentName: String { environment.rawValue }

    /// The most pages one paged request follows (`appStoreServerAPI.maxPages`).
    var maxPages: Int { engine.configuration.appStoreServerAPI?.maxPages ?? AppStoreServerAPIConfiguration.defaultMaxPages }

    // MARK: Notifications

    /// Get Notification History from `start` (default: the end of the last successful
    /// sync in this environment, with or without `onlyFailures`, but not beyond Apple's
    /// 180 days; else 180 days ago less ``historyWindowMargin``) to now, every page
    /// ingested; on success with no item rejected the end is kept as the next start (a
    /// rejected item is fetched again by the next sync). Pages that would never end (a
    /// `paginationToken` given twice, more pages than `appStoreServerAPI.maxPages`) stop it
    /// with `PAGINATION_LOOP`.
    /// - Parameters:
    ///   - start: the first moment asked for, in milliseconds since 1970; `nil` for the default.
    ///   - onlyFailures: ask only for notifications Apple failed to deliver.
    ///   - page: called after each page is committed.
    public func notifications(start: Int64?, onlyFailures: Bool, page: (SyncPage) -> Void) -> SyncOutcome {
        var totals = SyncTotals()
        let end = clock()
        let stateKey = Self.notificationStateKeys(environmentName)[onlyFailures ? 1 : 0]
        let from: Int64
        if let start {
            from = start
        } else {
            // Each kind keeps its own end; the later of the two is where the last sync ended.
            var last: Int64? = nil
            for key in Self.notificationStateKeys(environmentName) {
                let stored: String?
                do { stored = try engine.syncState(key) } catch { return SyncOutcome(totals: totals, failure: .engine(error)) }
                if let ended = stored.flatMap({ Int64($0) }) { last = max(last ?? ended, ended) }
            }
            from = max(last ?? .min, end - Self.historyWindow + Self.historyWindowMargin)
        }
        var token: String? = nil
        var tokens: Set<String> = []
        var pages = 0
        while true {
            let request = APIRequest.notificationHistory(startDate: from, endDate: end, onlyFailures: onlyFailures, paginationToken: token)
            let response: APIResponse
            do { response = try client.send(request) } catch { return SyncOutcome(totals: totals, failure: .api(error)) }
            guard case .array(let history)? = response.json?["notificationHistory"] else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, "has no notificationHistory array"))
            }
            var documents: [InputBytes] = []
            for entry in history {
                // Each signedPayload exactly as Apple POSTs it; anything else is handed on as is, to be quarantined.
                if case .string(let jws)? = entry["signedPayload"] {
                    documents.append(InputBytes(JSONWriter.string(["signedPayload": .string(jws)])))
                } else {
                    documents.append(InputBytes(JSONWriter.string(entry)))
                }
            }
            if let failure = ingest(documents, request: request, response: response, totals: &totals, page: page) {
                return SyncOutcome(totals: totals, failure: failure)
            }
            pages += 1
            guard let more = Self.hasMore(response.json) else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, Self.hasMoreNeitherTrueNorFalse(response.json)))
            }
            guard more else { break }
            guard case .string(let next)? = response.json?["paginationToken"], !next.isEmpty else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, "says hasMore but carries no paginationToken"))
            }
            guard tokens.insert(next).inserted else {
                return SyncOutcome(
                    totals: totals,
                    failure: .paginationLoop(request, response, "says hasMore with paginationToken \"\(next)\", which an earlier page of this sync already gave"))
            }
            guard pages < maxPages else {
                return SyncOutcome(totals: totals, failure: .tooManyPages(request, response, maxPages))
            }
            token = next
        }
        // A rejected item is not passed: the next sync fetches it again (specification section 18).
        if totals.rejected == 0 {
            do { try engine.setSyncState(String(end), keys: [stateKey]) } catch { return SyncOutcome(totals: totals, failure: .engine(error)) }
        }
        return SyncOutcome(totals: totals, failure: nil)
    }

    /// Where the end of a notification sync in `environment` is kept: without, then with `onlyFailures`.
    static func notificationStateKeys(_ environment: String) -> [String] {
        ["notifications:" + environment, "notifications-failures:" + environment]
    }

    // MARK: One customer

    /// Get Transaction History (v2) from the revision stored for this customer, then Get
    /// All Subscription Statuses and Get App Transaction Info, each page ingested; the
    /// revision reached is stored after each page, up to the first page with a rejected
    /// item (the next sync fetches that page again). A `revision` that does not advance
    /// while `hasMore`, or more pages than `appStoreServerAPI.maxPages`, stops it with
    /// `PAGINATION_LOOP`.
    /// - Parameters:
    ///   - id: any transaction id of the customer, or its appTransactionId.
    ///   - page: called after each page is committed.
    public func customer(_ id: String, page: (SyncPage) -> Void) -> SyncOutcome {
        var totals = SyncTotals()
        let idKey = "history:\(environmentName):id:\(id)"
        var revision: String?
        do { revision = try storedRevision(id: id, idKey: idKey) } catch { return SyncOutcome(totals: totals, failure: .engine(error)) }
        var revisions: Set<String> = revision.map { [$0] } ?? []
        var pages = 0
        // Whether every item so far was ingested: only then may the stored revision move.
        var resumable = true
        while true {
            let request = APIRequest.transactionHistory(transactionId: id, revision: revision)
            let response: APIResponse
            do { response = try client.send(request) } catch { return SyncOutcome(totals: totals, failure: .api(error)) }
            guard let json = response.json, case .array = json["signedTransactions"] else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, "has no signedTransactions array"))
            }
            let results: [IngestResult]
            switch ingestWhole(json, request: request, response: response, totals: &totals, page: page) {
            case .success(let ingested): results = ingested
            case .failure(let failure): return SyncOutcome(totals: totals, failure: failure)
            }
            pages += 1
            if results.contains(where: { $0.outcome == .rejected }) { resumable = false }
            var reached: String? = nil
            if case .string(let text)? = json["revision"], !text.isEmpty { reached = text }
            if let reached, resumable {
                let customers = Set(results.compactMap(\.appTransactionId)).sorted()
                let keys = [idKey] + customers.map { "history:\(environmentName):customer:\($0)" }
                do { try engine.setSyncState(reached, keys: keys) } catch { return SyncOutcome(totals: totals, failure: .engine(error)) }
            }
            guard let more = Self.hasMore(json) else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, Self.hasMoreNeitherTrueNorFalse(json)))
            }
            guard more else { break }
            guard let reached else {
                return SyncOutcome(totals: totals, failure: .malformed(request, response, "says hasMore but carries no revision"))
            }
            guard revisions.insert(reached).inserted else {
                return SyncOutcome(
                    totals: totals,
                    failure: .paginationLoop(request, response, "says hasMore with revision \"\(reached)\", which this sync already requested: the revision does not advance"))
            }
            guard pages < maxPages else {
                return SyncOutcome(totals: totals, failure: .tooManyPages(request, response, maxPages))
            }
            revision = reached
        }

        let statuses = APIRequest.subscriptionStatuses(transactionId: id)
        do {
            let response = try client.send(statuses)
            guard let json = response.json, case .array = json["data"] else {
                return SyncOutcome(totals: totals, failure: .malformed(statuses, response, "has no data array"))
            }
            if case .failure(let failure) = ingestWhole(json, request: statuses, response: response, totals: &totals, page: page) {
                return SyncOutcome(totals: totals, failure: failure)
            }
        } catch {
            return SyncOutcome(totals: totals, failure: .api(error))
        }

        let appTransaction = APIRequest.appTransactionInfo(transactionId: id)
        do {
            let response = try client.send(appTransaction)
            guard let json = response.json, case .string = json["signedAppTransactionInfo"] else {
                return SyncOutcome(totals: totals, failure: .malformed(appTransaction, response, "has no signedAppTransactionInfo"))
            }
            if case .failure(let failure) = ingestWhole(json, request: appTransaction, response: response, totals: &totals, page: page) {
                return SyncOutcome(totals: totals, failure: failure)
            }
        } catch {
            // An app bought before app transactions existed has none: nothing to ingest, not a failure.
            guard error.apiErrorCode == Self.appTransactionDoesNotExist, let status = error.status else {
                return SyncOutcome(totals: totals, failure: .api(error))
            }
            page(SyncPage(request: appTransaction.description, status: status, items: 0, results: []))
        }
        return SyncOutcome(totals: totals, failure: nil)
    }

    /// Whether a page says more pages follow: its `hasMore`, false when absent; `nil` when
    /// it is neither true nor false (such a page is not taken for the last one: a resume
    /// point never moves past pages not fetched).
    static func hasMore(_ json: JSONValue?) -> Bool? {
        switch json?["hasMore"] {
        case .bool(let more)?: return more
        case nil, .null?: return false
        default: return nil
        }
    }

    /// The end of the message for a page whose `hasMore` is neither true nor false.
    static func hasMoreNeitherTrueNorFalse(_ json: JSONValue?) -> String {
        "says hasMore \(json?["hasMore"].map(JSONWriter.string) ?? "null"), neither true nor false"
    }

    /// Apple's AppTransactionDoesNotExistError.
    static let appTransactionDoesNotExist: Int64 = 4_040_019

    /// The revision to start from: stored under the id itself, else under the customer
    /// the engine already links the id to.
    func storedRevision(id: String, idKey: String) throws(EngineError) -> String? {
        if let stored = try engine.syncState(idKey) { return stored }
        for key in try engine.customerKeys(forAnyId: id) {
            if let stored = try engine.syncState("history:\(environmentName):customer:\(key)") { return stored }
        }
        return nil
    }

    // MARK: Async

    /// ``notifications(start:onlyFailures:page:)`` on a thread of its own (it waits for Apple),
    /// suspending the caller; `page` is called on that thread.
    public func notifications(start: Int64?, onlyFailures: Bool, page: @escaping @Sendable (SyncPage) -> Void = { _ in }) async -> SyncOutcome {
        do {
            return try await engine.onOwnThread("entitlements.sync") { () throws(EngineError) in
                self.notifications(start: start, onlyFailures: onlyFailures, page: page)
            }
        } catch {
            return SyncOutcome(totals: SyncTotals(), failure: .engine(error))
        }
    }

    /// `customer(_:page:)` on a thread of its own, suspending the caller.
    public func customer(_ id: String, page: @escaping @Sendable (SyncPage) -> Void = { _ in }) async -> SyncOutcome {
        do {
            return try await engine.onOwnThread("entitlements.sync") { () throws(EngineError) in self.customer(id, page: page) }
        } catch {
            return SyncOutcome(totals: SyncTotals(), failure: .engine(error))
        }
    }

    /// ``setAppAccountToken(originalTransactionId:appAccountToken:)`` on a thread of its own.
    public func setAppAccountToken(originalTransactionId: String, appAccountToken: String) async -> SyncOutcome {
        do {
            return try await engine.onOwnThread("entitlements.sync") { () throws(EngineError) in
                self.setAppAccountToken(originalTransactionId: originalTransactionId, appAccountToken: appAccountToken)
            }
        } catch {
            return SyncOutcome(totals: SyncTotals(), failure: .engine(error))
        }
    }

    // MARK: Set App Account Token

    /// Set App Account Token: ties the purchases of `originalTransactionId` to `appAccountToken`
    /// (a UUID) at Apple; `sync --customer` then brings the re-signed data in.
    public func setAppAccountToken(originalTransactionId: String, appAccountToken: String) -> SyncOutcome {
        let request = APIRequest.setAppAccountToken(originalTransactionId: originalTransactionId, appAccountToken: appAccountToken)
        do {
            let response = try client.send(request)
            return SyncOutcome(
                totals: SyncTotals(), failure: nil,
                pages: [SyncPage(request: request.description, status: response.status, items: 0, results: [])])
        } catch {
            return SyncOutcome(totals: SyncTotals(), failure: .api(error))
        }
    }

    // MARK: Ingesting pages

    /// Ingests one answer: each signed item as an input document of its own (specification
    /// section 1), so no item waits on the size limit of a whole page; an answer of
    /// another shape goes in whole, for the ingest to judge.
    func ingestWhole(
        _ json: JSONValue, request: APIRequest, response: APIResponse, totals: inout SyncTotals, page: (SyncPage) -> Void
    ) -> Result<[IngestResult], SyncFailure> {
        var results: [IngestResult] = []
        let failure = ingest(
            Self.documents(of: json), request: request, response: response, totals: &totals,
            page: { synced in
                results = synced.results
                page(synced)
            })
        if let failure { return .failure(failure) }
        return .success(results)
    }

    /// The input documents an answer holds: a history page's transactions one by one, a
    /// statuses answer's transaction and renewal info pairs one by one, else the answer.
    static func documents(of json: JSONValue) -> [InputBytes] {
        func document(_ members: [(String, JSONValue)]) -> InputBytes { InputBytes(bytes: JSONWriter.bytes(.object(JSONObject(members)))) }
        let whole = [InputBytes(bytes: JSONWriter.bytes(json))]
        if case .array(let transactions)? = json["signedTransactions"] {
            return transactions.map { element in
                if case .string = element { return document([("signedTransactionInfo", element)]) }
                return InputBytes(bytes: JSONWriter.bytes(element))
            }
        }
        if case .array(let groups)? = json["data"] {
            var documents: [InputBytes] = []
            for group in groups {
                guard case .array(let entries)? = group["lastTransactions"] else { return whole }
                for entry in entries {
                    var members: [(String, JSONValue)] = []
                    if let transaction = entry["signedTransactionInfo"] { members.append(("signedTransactionInfo", transaction)) }
                    if let renewal = entry["signedRenewalInfo"] { members.append(("signedRenewalInfo", renewal)) }
                    guard !members.isEmpty else { return whole }
                    documents.append(document(members))
                }
            }
            return documents
        }
        return whole
    }

    func ingest(
        _ documents: [InputBytes], request: APIRequest, response: APIResponse, totals: inout SyncTotals, page: (SyncPage) -> Void
    ) -> SyncFailure? {
        var results: [IngestResult] = []
        if !documents.isEmpty {
            do { results = try engine.ingest(documents, workers: 2) } catch { return .engine(error) }
        }
        // An empty page (a history page with no transactions) holds no item.
        results.removeAll { $0.outcome == .empty }
        for result in results {
            switch result.outcome {
            case .appended: totals.appended += 1
            case .duplicate: totals.duplicate += 1
            case .rejected: totals.rejected += 1
            case .empty, .error: break  // removed above; not delivered (the ingest threw)
            }
        }
        page(SyncPage(request: request.description, status: response.status, items: results.count, results: results))
        return nil
    }
}

/// One page fetched and committed.
public struct SyncPage: Sendable {
    /// `METHOD /path?query`.
    public var request: String
    public var status: Int
    /// How many signed items the page held (each one appended, duplicate or rejected).
    public var items: Int
    public var results: [IngestResult]

    public init(request: String, status: Int, items: Int, results: [IngestResult]) {
        self.request = request
        self.status = status
        self.items = items
        self.results = results
    }

    /// `{"request": ..., "status": 200, "items": N}`.
    public func json() -> JSONValue {
        ["request": .string(request), "status": .int(Int64(status)), "items": .int(Int64(items))]
    }
}

/// What a sync added.
public struct SyncTotals: Sendable, Equatable {
    public var appended = 0
    public var duplicate = 0
    public var rejected = 0

    public init(appended: Int = 0, duplicate: Int = 0, rejected: Int = 0) {
        self.appended = appended
        self.duplicate = duplicate
        self.rejected = rejected
    }

    /// `{"appended": A, "duplicate": D, "rejected": R}`.
    public func json() -> JSONValue {
        ["appended": .int(Int64(appended)), "duplicate": .int(Int64(duplicate)), "rejected": .int(Int64(rejected))]
    }
}

/// Why a sync stopped early (what it committed before stays committed).
public enum SyncFailure: Error, Sendable {
    /// The API answered with an error, or did not answer.
    case api(APIError)
    /// The database could not be written.
    case engine(EngineError)

    static func malformed(_ request: APIRequest, _ response: APIResponse, _ what: String) -> SyncFailure {
        .api(
            APIError(
                code: .malformedResponse, request: request.description, status: response.status,
                message: "Apple's answer \(what)"))
    }

    /// A paged answer that would make the sync loop forever.
    static func paginationLoop(_ request: APIRequest, _ response: APIResponse, _ what: String) -> SyncFailure {
        .api(
            APIError(
                code: .paginationLoop, request: request.description, status: response.status,
                message: "Apple's answer \(what): following it would never end, so the sync stops here (what it ingested is kept; run it again later)"))
    }

    static func tooManyPages(_ request: APIRequest, _ response: APIResponse, _ limit: Int) -> SyncFailure {
        .api(
            APIError(
                code: .paginationLoop, request: request.description, status: response.status,
                message: "Apple's answer still says hasMore after \(limit) pages, the limit appStoreServerAPI.maxPages sets: the sync stops here (what it ingested is kept); raise maxPages if the history is really that long"))
    }

    /// The line the commands print.
    public func json() -> JSONValue {
        switch self {
        case .api(let error): return error.json()
        case .engine(let error): return ["error": ["code": .string(error.code.rawValue), "message": .string(error.message)]]
        }
    }
}

/// The end of a sync: what it added, and why it stopped when it stopped early.
public struct SyncOutcome: Sendable {
    public var totals: SyncTotals
    public var failure: SyncFailure?
    /// For requests that ingest nothing (Set App Account Token): the answer.
    public var pages: [SyncPage] = []

    public init(totals: SyncTotals, failure: SyncFailure?, pages: [SyncPage] = []) {
        self.totals = totals
        self.failure = failure
        self.pages = pages
    }
}

extension Engine {
    /// The value `sync` stored under `key`.
    func syncState(_ key: String) throws(EngineError) -> String? {
        do { return try store.withLock { store throws(StoreError) in try store.syncState(key) } } catch { throw EngineError(error) }
    }

    func setSyncState(_ value: String, keys: [String]) throws(EngineError) {
        do {
            try store.withLock { store throws(StoreError) in try store.setSyncState(value, keys: keys, at: Engine.now()) }
        } catch {
            throw EngineError(error)
        }
    }

    /// Customers the engine already links `id` to: itself when it is a customer key, the
    /// holders of it as an originalTransactionId, the holder of it as a transactionId
    /// (a renewal's, say).
    func customerKeys(forAnyId id: String) throws(EngineError) -> [CustomerKey] {
        do {
            return try store.withLock { store throws(StoreError) -> [CustomerKey] in
                var keys = try store.customers(originalTransactionId: id)
                if try store.projection(of: id) != nil { keys.insert(id, at: 0) }
                if let holder = try store.customer(transactionId: id), !keys.contains(holder) { keys.append(holder) }
                return keys
            }
        } catch {
            throw EngineError(error)
        }
    }
}
