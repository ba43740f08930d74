#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Entitlements

/// entitlements: the command line. Thin: parse flags, call the library, print JSON.
func run(_ argv: [String]) -> ExitCode {
    let arguments = argv.dropFirst()
    guard let command = arguments.first else {
        Output.error(Help.overview)
        return .usage
    }
    if command == "--version" || command == "-V" {
        guard arguments.count == 1 else {
            Output.error("entitlements: --version takes no arguments\nRun `entitlements --help` for usage.")
            return .usage
        }
        print("entitlements \(Engine.version)")
        return .success
    }
    if command == "--help" || command == "-h" || command == "help" {
        if command == "help", let topic = arguments.dropFirst().first, let text = Help.commands[topic] {
            print(text)
        } else {
            print(Help.overview)
        }
        return .success
    }
    let rest = arguments.dropFirst()
    if rest.contains("--help") || rest.contains("-h") {
        guard let text = Help.commands[command] else {
            Output.error("entitlements: unknown command \"\(command)\"\n\n" + Help.overview)
            return .usage
        }
        print(text)
        return .success
    }
    do throws(UsageError) {
        switch command {
        case "ingest": return try Commands.ingest(rest)
        case "query": return try Commands.query(rest)
        case "replay": return try Commands.replay(rest)
        case "verify": return try Commands.verify(rest)
        case "audit": return try Commands.audit(rest)
        case "history": return try Commands.history(rest)
        case "changes": return try Commands.changes(rest)
        case "lifecycle": return try Commands.lifecycle(rest)
        case "revenue": return try Commands.revenue(rest)
        case "metrics": return try Commands.metrics(rest)
        case "sign": return try SignCommand.run(rest)
        case "sync": return try SyncCommand.sync(rest)
        case "set-account-token": return try SyncCommand.setAccountToken(rest)
        case "serve": return try ServeCommand.run(rest)
        case "usage": return try UsageCommand.run(rest)
        case "grant": return try GrantCommand.run(rest)
        case "revoke-grant": return try RevokeGrantCommand.run(rest)
        case "credit": return try CreditCommand.run(rest)
        case "link": return try LinkCommand.run(rest)
        case "consumption": return try ConsumptionCommand.run(rest)
        case "deliver": return try WebhooksCommand.deliver(rest)
        case "webhooks": return try WebhooksCommand.webhooks(rest)
        case "recover": return try RecoverCommand.run(rest)
        case "transaction-info": return try TransactionInfoCommand.run(rest)
        case "refund-history": return try RefundHistoryCommand.run(rest)
        case "lookup-order": return try LookupOrderCommand.run(rest)
        case "finish-transaction": return try FinishTransactionCommand.run(rest)
        case "extend": return try ExtendCommand.run(rest)
        case "test-notification": return try TestNotificationCommand.run(rest)
        case "migrate-receipts": return try MigrateReceiptsCommand.run(rest)
        case "demo": return try Demo.run(rest)
        default:
            throw UsageError(message: "unknown command \"\(command)\" (expected ingest, query, replay, verify, audit, history, changes, lifecycle, revenue, metrics, sign, sync, set-account-token, serve, usage, grant, revoke-grant, credit, link, consumption, deliver, webhooks, recover, transaction-info, refund-history, lookup-order, finish-transaction, extend, test-notification, migrate-receipts, demo)", command: nil)
        }
    } catch {
        let prefix = error.command.map { "entitlements " + $0 } ?? "entitlements"
        var text = prefix + ": " + error.message
        if let command = error.command, let help = Help.commands[command] {
            let synopsis = help.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
            text += "\n\nUsage:\n" + synopsis + "\nRun `entitlements " + command + " --help` for details."
        } else {
            text += "\nRun `entitlements --help` for usage."
        }
        Output.error(text)
        return .usage
    }
}

// A migration that rewrites the log (an upgrade from an older engine) says how it goes.
Engine.setMigrationProgressHandler { progress in
    guard progress.eventsTotal > 0 else { return }
    Output.error(
        "entitlements: migrating \(progress.path) (\(progress.migration)): \(progress.eventsDone) of \(progress.eventsTotal) events rewritten")
}
// Before anything uses OpenSSL: exiting while another thread is inside it must not crash.
OpenSSLAtExit.keepStateUntilTheEnd()
exit(run(CommandLine.arguments).rawValue)
