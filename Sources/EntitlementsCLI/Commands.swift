import EntitlementCore
import Entitlements
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Exit codes of the command line.
enum ExitCode: Int32 {
    case success = 0
    case rejected = 1
    case usage = 2
    case storage = 3
}

/// The commands: each parses its flags, calls the library, prints JSON. Each has a file
/// of its own (`IngestCommand.swift`, `QueryCommand.swift`...); here is what they share.
enum Commands {
    static let defaultDatabase = "entitlements.sqlite"

    /// Loads the configuration and opens the database as `mode` allows: commands
    /// that only read open it ``DatabaseMode/readOnly`` (a missing file is
    /// `DATABASE_NOT_FOUND`, nothing is created or migrated); commands that act on
    /// what a database holds (`replay`, `deliver`) ``DatabaseMode/existing``; commands
    /// that record ``DatabaseMode/create``.
    ///
    /// Every command but `replay` answers under the database's active rules and says
    /// on standard error when its configuration's rules differ (``Engine/rulesWarning()``).
    /// - Parameter requirement: what the command needs of the configuration beyond its
    ///   validity: a message naming the field when it is missing, checked before the
    ///   database is opened (exit 2, nothing opened or created).
    static func loadEngine(
        _ arguments: Arguments, command: String, mode: DatabaseMode = .create, warnRules: Bool = true,
        requirement: (EngineConfiguration) -> String? = { _ in nil }
    ) throws(UsageError) -> (Engine?, ExitCode) {
        guard let configPath = arguments.values["--config"] else {
            throw UsageError(message: "--config PATH is required", command: command)
        }
        let configuration: EngineConfiguration
        do {
            configuration = try EngineConfiguration.loadChecked(path: configPath)
        } catch {
            Output.error("entitlements \(command): \(error.description)")
            return (nil, .usage)
        }
        if let missing = requirement(configuration) {
            Output.error("entitlements \(command): \(missing)")
            return (nil, .usage)
        }
        let database = arguments.values["--db"] ?? defaultDatabase
        do {
            let engine = try Engine(configuration: configuration, databasePath: database, mode: mode)
            if warnRules, let warning = engine.rulesWarning() { Output.error(warning) }
            return (engine, .success)
        } catch {
            Output.error("entitlements \(command): \(error.code): \(error.message)")
            if error.code == .databaseMismatch { return (nil, .usage) }
            return (nil, error.code.isDatabase ? .storage : .usage)
        }
    }

    static func storageFailure(_ command: String, _ error: EngineError) -> ExitCode {
        Output.error("entitlements \(command): \(error.code): \(error.message)")
        return .storage
    }
}
