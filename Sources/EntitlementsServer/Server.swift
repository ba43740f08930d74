import Entitlements
import Foundation
import HTTPServer

/// `entitlements serve` as a library: the engine behind an HTTP/1.1 server
/// (specification section 9). Create it, call ``run()`` (it blocks), and
/// ``stop()`` it (or send SIGTERM after ``stopOnSignals()``): it stops
/// accepting, finishes the requests it accepted, commits what is pending,
/// checkpoints the database and returns.
public final class Server: Sendable {
    /// Limits and bounds a server keeps; the defaults are the specification's.
    public struct Options: Sendable {
        public var limits: ServerLimits
        public var quarantine: QuarantineBound
        /// How the configured webhooks are delivered while the server runs.
        public var webhooks = WebhookDeliverer.Options()

        public init(maxBodyBytes: Int) {
            limits = ServerLimits(maxBodyBytes: maxBodyBytes)
            quarantine = QuarantineBound()
        }
    }

    public let engine: Engine
    let http: HTTPServer<Route>
    /// Delivers the configured webhooks while the server runs (`nil` without any).
    let deliverer: WebhookDeliverer?
    let api: ServeAPI

    /// The address listened on (with the port the system chose for port 0).
    public var address: ListenAddress { http.address }

    /// Binds the address.
    /// - Throws: ``ServerError``: ``ServerError/Code/tokenRequired`` for an address beyond loopback
    ///   without a token, ``ServerError/Code/listenFailed`` when the address cannot be bound.
    public init(engine: Engine, settings: ServeSettings, options: Options? = nil, log: AccessLog? = AccessLog()) throws(ServerError) {
        if !settings.listen.isLoopback && settings.token == nil {
            throw ServerError(
                code: .tokenRequired,
                message:
                    "refusing to listen on \(settings.listen), which is not a loopback address, without serve.token in the configuration: anyone who can reach it could read every customer's entitlements"
            )
        }
        var options = options ?? Options(maxBodyBytes: engine.configuration.maxInputBytes)
        if let bound = settings.maxConnections { options.limits.maxConnections = bound }
        if let bound = settings.maxConnectionsPerClient { options.limits.maxConnectionsPerClient = bound }
        self.engine = engine
        do {
            // A read replica delivers no webhooks: its primary does (specification section 15).
            deliverer = engine.configuration.webhooks.isEmpty || engine.mode == .readOnly ? nil : try WebhookDeliverer(engine: engine, options: options.webhooks)
        } catch {
            throw ServerError(code: .webhooksFailed, message: error.description)
        }
        let api = ServeAPI(
            engine: engine, token: settings.token, adminTokens: settings.adminTokens, trustedProxies: settings.trustedProxies,
            bound: options.quarantine)
        self.api = api
        // A read replica's own answers to requests it could not take carry its head too.
        let headFields: HTTPServer<Route>.ErrorFields? =
            engine.mode == .readOnly
            ? { @Sendable () -> [HTTPField] in
                guard let head = api.currentHead() else { return [] }
                return [HTTPField(name: ServeAPI.logHeadField, value: String(head.seq))]
            } : nil
        http = try HTTPServer(
            listen: settings.listen, limits: options.limits, log: log,
            preflight: { head, client in
                let started = DispatchTime.now().uptimeNanoseconds
                let decision = api.replicaPreflight(head, client: client)
                if case .answer(let response) = decision {
                    // Answered from the head (404, 405, 401, a refused write): counted here.
                    let route = Route(path: head.path)?.label ?? "unmatched"
                    api.counters.request(
                        route: route, method: head.method, status: response.status,
                        seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                }
                return decision
            },
            handler: { request, route, client in
                let started = DispatchTime.now().uptimeNanoseconds
                let response = api.replicaHandle(request, route: route, client: client)
                api.counters.request(
                    route: route.label, method: request.head.method, status: response.status,
                    seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                return response
            },
            errorFields: headFields,
            // A write waiting for another process's lock would hold the stop for a busy timeout.
            onStopping: { [engine] in engine.abandonLockWaits() })
        api.batcher.stopsWith { [http] in http.isStopping }
    }

    /// Serves until stopped; then commits what is pending and checkpoints. Once the stop
    /// has begun, the engine's writes no longer wait for a lock another process holds:
    /// what is pending then gets `503` at once instead of a busy timeout later.
    /// - Throws: ``EngineError`` when the final checkpoint fails (everything acknowledged is committed regardless).
    public func run() throws(EngineError) {
        // Waits for other processes' locks were abandoned when the stop began: the engine
        // waits again once the server is done with it.
        defer { engine.resumeLockWaits() }
        deliverer?.start()
        http.run()
        deliverer?.stop()
        api.batcher.finish()
        // A read replica writes nothing, checkpoints included.
        if engine.mode != .readOnly { try engine.checkpoint() }
    }

    /// Stops accepting and finishes what was accepted; ``run()`` then returns. Safe from any thread.
    public func stop() { http.stop() }

    /// SIGTERM and SIGINT call ``stop()``.
    public func stopOnSignals() { http.stopOnSignals() }

    /// Ingest batches committed so far and the items they held.
    public var ingestStatistics: (batches: Int, items: Int) { api.batcher.statistics }

    /// Verification passes over `POST /notifications` bodies so far and the bodies they verified.
    public var verificationStatistics: (passes: Int, bodies: Int) { api.notifications.statistics }
}

extension ServerError.Code {
    /// `serve` refuses to listen beyond loopback without `serve.token`.
    public static let tokenRequired: ServerError.Code = "TOKEN_REQUIRED"
    /// The webhook deliverer could not open its database connection or its trust store.
    public static let webhooksFailed: ServerError.Code = "WEBHOOKS_FAILED"
}
