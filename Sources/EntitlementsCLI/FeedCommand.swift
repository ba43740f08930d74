import EntitlementCore
import Entitlements
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
    // MARK: feeds (changes, lifecycle)

    /// A feed the command line prints from a cursor: how it records what time has made
    /// due, its last cursor, and a page of its lines after a cursor (with the last one's cursor).
    struct Feed {
        var command: String
        var recordDue: (Engine) throws(EngineError) -> Void
        var lastCursor: (Engine) throws(EngineError) -> Int64
        var page: (Engine, _ after: Int64, _ limit: Int) throws(EngineError) -> (lines: [JSONValue], lastCursor: Int64?)
    }

    /// `entitlements changes` and `entitlements lifecycle`: `--since`, `--limit`, `--follow`.
    static func printFeed(_ args: ArraySlice<String>, _ feed: Feed) throws(UsageError) -> ExitCode {
        let command = feed.command
        let arguments = try Arguments(args, command: command, valued: ["--db", "--config", "--since", "--limit"], switches: ["--follow"])
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: command)
        }
        var since: Int64 = 0
        if let text = arguments.values["--since"] {
            guard let value = Int64(text), value >= 0 else {
                throw UsageError(message: "--since expects a cursor: a non-negative integer printed by an earlier line, got \"\(text)\"", command: command)
            }
            since = value
        }
        var limit: Int? = nil
        if let text = arguments.values["--limit"] {
            guard let value = Int(text), value >= 1 else {
                throw UsageError(message: "--limit expects a positive integer, got \"\(text)\"", command: command)
            }
            limit = value
        }
        let follow = arguments.flags.contains("--follow")
        if follow {
            // Runs until interrupted: whatever mask the parent left, SIGINT and SIGTERM end it.
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGINT)
            sigaddset(&signals, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        }
        let (loaded, code) = try loadEngine(arguments, command: command, mode: .existing)
        guard let engine = loaded else { return code }
        do {
            // Everything due is recorded before the cursor is checked and anything printed.
            try feed.recordDue(engine)
            let last = try feed.lastCursor(engine)
            if since > last {
                // Nothing was recorded after it, yet. A cursor kept from another database, or from
                // this one before it was restored from an older copy, would otherwise go unnoticed.
                Output.error(
                    "entitlements \(command): warning: --since \(since) is past the last cursor recorded (\(last)): nothing to print yet; is the cursor another database's, or was this one restored from an older copy?")
            }
            var cursor = since
            var printed = 0
            while true {
                let want = limit.map { $0 - printed }
                let (lines, lastCursor) = try feed.page(engine, cursor, want.map { min($0, 1_000) } ?? 1_000)
                if let lastCursor {
                    Output.lines(lines)
                    printed += lines.count
                    cursor = lastCursor
                }
                if let limit, printed >= limit { break }
                if lines.count == 1_000 { continue }
                guard follow else { break }
                usleep(250_000)
            }
            return .success
        } catch {
            return storageFailure(command, error)
        }
    }
}
