import EntitlementCore
import Entitlements
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements deliver` and `entitlements webhooks`: pushing the feeds to the
/// configured endpoints (specification section 12).
enum WebhooksCommand {
    static let deliverHelp = """
        entitlements deliver [--db PATH] --config PATH [--once]

        Delivers the feeds to the endpoints of the configuration's "webhooks": each line is
        one POST, with "feed" added, signed as Standard Webhooks say (webhook-id,
        webhook-timestamp, webhook-signature v1). At least once, in feed order per
        endpoint; a line that is not answered 2xx within 10 s is retried after 5 s, 30 s,
        2 min, 10 min, 30 min, 1 h, then hourly (or the endpoint's retrySchedule), while the
        lines after it wait, and is marked failed 24 h after its first attempt. Where each
        endpoint stands is kept in the database: a restart resumes there. One deliverer
        works on a database at a time; another waits for it (serve delivers while it runs).
        Prints one line per attempt:
          {"url":"https://...","feed":"changes","cursor":41,"id":"changes:41","delivered":true,"status":200}

        OPTIONS
          --db PATH        an existing database (default entitlements.sqlite; DATABASE_NOT_FOUND,
                           exit 3, when missing)
          --config PATH    configuration file with "webhooks" (required)
          --once           one attempt at every line due now (retries not yet due are left
                           for later), then exit: 0 when every attempt succeeded, 1 when some
                           failed. Without it, runs until SIGTERM or Ctrl-C.
        """

    static let webhooksHelp = """
        entitlements webhooks [--db PATH] --config PATH (status | redeliver --url U [--feed lifecycle|changes] --since CURSOR)

        status     prints, as NDJSON, where each configured endpoint stands in each feed:
                   {"url":"https://...","feed":"changes","deliveredCursor":40,"lastCursor":41,"lag":1,
                    "failingCursor":41,"failingSince":MS,"attempts":2,"nextAttemptAt":MS,
                    "lastError":"HTTP 500","failedLines":0}
        redeliver  sends the feed to the endpoint again from after CURSOR (its failing line,
                   if any, is forgotten); the deliverer (deliver, or serve) takes it from there.

        OPTIONS
          --db PATH        database (default entitlements.sqlite)
          --config PATH    configuration file with "webhooks" (required)
          --url U          the endpoint, as configured
          --feed F         lifecycle or changes (default: the endpoint's one feed, or lifecycle
                           for an endpoint sent both)
          --since CURSOR   the cursor after which to send again (0: the whole feed)
        """

    /// `entitlements deliver`.
    static func deliver(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "deliver", valued: ["--db", "--config"], switches: ["--once"])
        if let extra = arguments.positional.first { throw UsageError(message: "unexpected argument \(extra)", command: "deliver") }
        let once = arguments.flags.contains("--once")
        var signals = sigset_t()
        if !once {
            // Waited for below; blocked before any thread starts, so that every thread inherits the mask.
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &signals, nil)
        }
        let (loaded, code) = try Commands.loadEngine(arguments, command: "deliver", mode: .existing) { configuration in
            configuration.webhooks.isEmpty
                ? "configuration field \"webhooks\": no endpoint is configured: add [{\"url\": ..., \"secret\": \"whsec_...\"}]" : nil
        }
        guard let engine = loaded else { return code }
        var options = WebhookDeliverer.Options()
        options.onAttempt = { attempt in Output.line(line(attempt)) }
        do {
            if once {
                let report = try engine.deliverWebhooks(options: options)
                return report.allSucceeded ? .success : .rejected
            }
            let deliverer = try WebhookDeliverer(engine: engine, options: options)
            deliverer.start()
            var received: Int32 = 0
            sigwait(&signals, &received)
            deliverer.stop()
            return .success
        } catch {
            return Commands.storageFailure("deliver", error)
        }
    }

    /// The line printed for one attempt.
    static func line(_ attempt: WebhookAttempt) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("url", .string(attempt.url)), ("feed", .string(attempt.line.feed.rawValue)), ("cursor", .int(attempt.line.cursor)),
            ("id", .string(attempt.line.id)),
        ]
        switch attempt.outcome {
        case .delivered(let status):
            members += [("delivered", .bool(true)), ("status", .int(Int64(status)))]
        case .failed(let reason):
            members += [("delivered", .bool(false)), ("error", .string(reason)), ("markedFailed", .bool(attempt.markedFailed))]
        }
        return .object(JSONObject(members))
    }

    /// `entitlements webhooks (status | redeliver ...)`.
    static func webhooks(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(args, command: "webhooks", valued: ["--db", "--config", "--url", "--feed", "--since"], switches: [])
        guard let action = arguments.positional.first, arguments.positional.count == 1, action == "status" || action == "redeliver" else {
            throw UsageError(message: "expected status or redeliver", command: "webhooks")
        }
        var redeliver: (url: String, feed: WebhookFeed?, since: Int64)? = nil
        if action == "redeliver" {
            guard let url = arguments.values["--url"] else { throw UsageError(message: "redeliver needs --url U", command: "webhooks") }
            // Without --feed the engine takes the endpoint's one feed, or the lifecycle feed of one sent both.
            var feed: WebhookFeed? = nil
            if let name = arguments.values["--feed"] {
                guard let named = WebhookFeed(rawValue: name) else {
                    throw UsageError(message: "--feed \(name): expected lifecycle or changes", command: "webhooks")
                }
                feed = named
            }
            guard let text = arguments.values["--since"], let since = Int64(text), since >= 0 else {
                throw UsageError(message: "redeliver needs --since CURSOR, a non-negative integer", command: "webhooks")
            }
            redeliver = (url, feed, since)
        } else if let flag = ["--url", "--feed", "--since"].first(where: { arguments.values[$0] != nil }) {
            throw UsageError(message: "\(flag) is for redeliver", command: "webhooks")
        }
        let (loaded, code) = try Commands.loadEngine(arguments, command: "webhooks", mode: .existing)
        guard let engine = loaded else { return code }
        do {
            if let redeliver {
                let feed = try engine.redeliverWebhooks(url: redeliver.url, feed: redeliver.feed, since: redeliver.since)
                Output.line(["url": .string(redeliver.url), "feed": .string(feed.rawValue), "deliveredCursor": .int(redeliver.since)])
            } else {
                Output.lines(try engine.webhookStatus().map { $0.json() })
            }
            return .success
        } catch {
            if error.code == .configuration {
                Output.error("entitlements webhooks: \(error.message)")
                return .usage
            }
            return Commands.storageFailure("webhooks", error)
        }
    }
}
