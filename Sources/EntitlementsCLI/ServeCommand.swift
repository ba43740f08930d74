import Entitlements
import EntitlementsServer
import Foundation

/// `entitlements serve`: the webhook Apple calls and the API apps query, over HTTP (specification section 9).
enum ServeCommand {
    static let help = """
        entitlements serve [--db PATH] --config PATH [--listen HOST:PORT] [--read-only]

        Runs the engine as an HTTP/1.1 server (plain HTTP: put a TLS reverse proxy in front).
        Listens on --listen, else serve.listen in the configuration, else 127.0.0.1:8080
        (port 0: any free port). Prints {"listening":"HOST:PORT"} on standard output once it
        accepts connections, and one access log line per request on standard error.

          POST /notifications                 Apple's notification body; 200 with the ingest line once committed
                                              (a rejected input too: it is quarantined); 503 when the database
                                              cannot be written, so that Apple retries
          POST /transactions                  any input document, or NDJSON (one document per line); 200 with
                                              a JSON array of result lines, each with its line's "input" number
          GET  /customers/{appTransactionId}  the query object (also otid:...); 404 NOT_FOUND
          GET  /customers?originalTransactionId=X | transactionId=T | appAccountToken=U   [&at=MS]
          GET  /customers/{id}/history        the history lines as a JSON array
          GET  /changes?since=C&limit=N       the changes feed, NDJSON
          GET  /lifecycle?since=C&limit=N     the lifecycle feed, NDJSON
          GET  /health                        {"ok":true}, with or without a token

        The operator's endpoints (serve.adminToken only; the query token gets 403), each
        recorded with the token's label as the operator; bodies are JSON objects with the
        command's options as fields (appTransactionId | originalTransactionId | transactionId |
        appAccountToken | appUserId, reason; times as ms or ISO 8601):
          POST /grants                        {"id","entitlement","until"|"days",["from"],["force"]}
          POST /grants/{id}/revoke            {["at"]} (the body may be empty)
          POST /credits                       {"id","currency","units"}
          POST /links                         {"id","appUserId", customer selector}
          GET  /users/{appUserId}             the query --app-user-id object [?at=MS]
        each 200 {"result":"appended"|"duplicate","id":...}; 404 NOT_FOUND; 409 GRANT_CONFLICT,
        ID_CONFLICT, LINK_CONFLICT, INSUFFICIENT_BALANCE; 400 other bad input.
        serve.adminToken is a token string (labelled "admin"), {"token":"...","label":"support"},
        or a list of such objects.

        --read-only serves a read replica: a copy of the database that another process keeps
        up to date (a Litestream follower, litestream restore -f). It opens the database only
        to read: it never creates, migrates, writes or checkpoints it (a read-only file or
        folder will do), and delivers no webhooks. The GET endpoints answer as usual; every
        write (POST /notifications, POST /transactions) gets 503 READ_ONLY_REPLICA with
        Retry-After. Every answer carries X-Log-Head: <seq of the last event it has>, and
        GET /health says {"ok":true,"head":SEQ,"ageMs":MS}, ageMs being now minus when that
        event was received. A copy Litestream follows (PATH-txid beside it) is read without
        SQLite's locks and without -wal or -shm, as any user, so restore -f keeps applying
        changes; start it once the follower has restored the copy.

        Rejected inputs posted over HTTP are quarantined up to a bound per client address and
        day (100 inputs, 1 MiB); data Apple signed for another app or environment has a bound
        of its own. Behind a reverse proxy on another machine, list it in serve.trustedProxies
        (addresses or CIDR ranges, e.g. ["10.0.0.0/8"]): its X-Forwarded-For then names the
        client, as a proxy on this machine's does.

        With serve.token set, every endpoint but POST /notifications and GET /health requires
        Authorization: Bearer <token> (401 otherwise); without one, serve refuses to listen
        beyond loopback (exit 2). SIGTERM (or Ctrl-C) stops accepting, finishes the accepted
        requests, checkpoints the database and exits 0.

        Exit codes: 0 stopped by SIGTERM or SIGINT; 2 a usage or configuration error, an
        address beyond loopback without serve.token, or an address that cannot be listened
        on (LISTEN_FAILED: in use, or not this machine's; choose another with --listen or
        serve.listen); 3 the database could not be used.
        """

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "serve", valued: ["--db", "--config", "--listen"], switches: ["--read-only"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \(extra)", command: "serve") }
        guard let configPath = arguments.values["--config"] else { throw UsageError(message: "--config PATH is required", command: "serve") }
        var settings: ServeSettings
        do { settings = try ServeSettings.load(path: configPath) } catch {
            Output.error("entitlements serve: \(error.description)")
            return .usage
        }
        if let listen = arguments.values["--listen"] {
            guard settings.setListen(listen) else {
                throw UsageError(message: "--listen expects HOST:PORT with a numeric address, e.g. 127.0.0.1:8080, got \"\(listen)\"", command: "serve")
            }
        }
        if settings.needsTokenToListen {
            Output.error(
                "entitlements serve: refusing to listen on \(settings.listen), which is not a loopback address, without serve.token in the configuration (set a long random token, or listen on 127.0.0.1 behind a reverse proxy)"
            )
            return .usage
        }
        let readOnly = arguments.flags.contains("--read-only")
        let (loaded, code) = try Commands.loadEngine(arguments, command: "serve", mode: readOnly ? .readOnly : .create)
        guard let engine = loaded else { return code }
        let server: Server
        var options = Server.Options(maxBodyBytes: engine.configuration.maxInputBytes)
        options.webhooks.onAttempt = { attempt in
            // Failed webhook attempts go to standard error beside the access log.
            if case .failed = attempt.outcome { Output.error(JSONWriter.string(WebhooksCommand.line(attempt))) }
        }
        do { server = try Server(engine: engine, settings: settings, options: options) } catch {
            if error.code == .listenFailed {
                // A busy or unavailable address is the operator's choice to change, not the database's fault.
                Output.error(
                    "entitlements serve: \(error.code): \(error.message); choose another address with --listen HOST:PORT or serve.listen in the configuration")
                return .usage
            }
            Output.error("entitlements serve: \(error.code): \(error.message)")
            return error.code == .tokenRequired ? .usage : .storage
        }
        server.stopOnSignals()
        let finisher = FinishTransactionCommand.startFinisher(engine, command: "serve")
        // SIGTERM ends serve within seconds: what is still due stays queued for the next run.
        defer { finisher?.stop(finishingDue: false) }
        let v1Syncer = Self.startV1Syncer(engine)
        defer { v1Syncer?.stop() }
        Output.line(["listening": .string(server.address.description)])
        do {
            try server.run()
        } catch {
            Output.error("entitlements serve: \(error.code): \(error.message)")
            return .storage
        }
        return .success
    }

    /// With `appStoreServerAPI` configured (and a writable database), syncs in the background the
    /// original transaction id of each V1 notification rejected, reporting on standard error.
    static func startV1Syncer(_ engine: Engine) -> V1NotificationSyncer? {
        guard engine.configuration.appStoreServerAPI != nil, engine.mode != .readOnly else { return nil }
        do {
            let syncer = try V1NotificationSyncer(engine: engine) { id, outcome in
                Output.error(MigrateReceiptsCommand.v1SyncLine(id, outcome, command: "serve"))
            }
            syncer.start()
            return syncer
        } catch {
            Output.error("entitlements serve: warning: cannot sync the V1 notifications' original transaction ids: \(error.code): \(error.message)")
            return nil
        }
    }
}
