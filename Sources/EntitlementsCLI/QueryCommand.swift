import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Commands {
    // MARK: query

    static func query(_ args: ArraySlice<String>) throws(UsageError) -> ExitCode {
        let arguments = try Arguments(
            args, command: "query",
            valued: [
                "--db", "--config", "--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token",
                "--app-user-id", "--at",
            ],
            switches: ["--pretty"])
        let selectors = ["--app-transaction-id", "--original-transaction-id", "--transaction-id", "--app-account-token", "--app-user-id"]
            .filter { arguments.values[$0] != nil }
        guard selectors.count == 1 else {
            throw UsageError(
                message: "give exactly one of --app-transaction-id, --original-transaction-id, --transaction-id, --app-account-token, --app-user-id",
                command: "query")
        }
        let at = try arguments.time("--at", command: "query")
        if !arguments.positional.isEmpty {
            throw UsageError(message: "unexpected argument \(arguments.positional[0])", command: "query")
        }
        let (loaded, code) = try loadEngine(arguments, command: "query", mode: .readOnly)
        guard let engine = loaded else { return code }
        if let appUserId = arguments.values["--app-user-id"] {
            do {
                let answer = try engine.query(appUserId: appUserId, at: at)
                for warning in engine.takeProductWarnings() { Output.error(warning) }
                if arguments.flags.contains("--pretty") { print(Output.pretty(answer.json())) } else { Output.line(answer.json()) }
                if case .appUser = answer { return .success }
                return .rejected
            } catch {
                return storageFailure("query", error)
            }
        }
        let query: CustomerQuery
        switch selectors[0] {
        case "--app-transaction-id": query = .appTransactionId(arguments.values["--app-transaction-id"]!)
        case "--original-transaction-id": query = .originalTransactionId(arguments.values["--original-transaction-id"]!)
        case "--transaction-id": query = .transactionId(arguments.values["--transaction-id"]!)
        default: query = .appAccountToken(arguments.values["--app-account-token"]!)
        }
        do {
            let answer = try engine.query(query, at: at)
            for warning in engine.takeProductWarnings() { Output.error(warning) }
            if arguments.flags.contains("--pretty") { print(Output.pretty(answer.json())) } else { Output.line(answer.json()) }
            if case .notFound = answer { return .rejected }
            return .success
        } catch {
            return storageFailure("query", error)
        }
    }
}
