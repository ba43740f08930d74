import EntitlementCore
import Entitlements
import EventStore
import Foundation
import TestPKI

/// A scratch folder with a configuration trusting ``Scenario/pki``'s root,
/// removed when released (unless `RELIABILITY_KEEP` is set, for post-mortems).
package final class Workspace {
    package let folder: URL
    package let configURL: URL

    /// - Parameter busyTimeoutMilliseconds: the configuration's `busyTimeoutMilliseconds`
    ///   (the engine's default when `nil`), for tests of a lock held past it.
    package init(name: String = "reliability", maxInputBytes: Int? = nil, environment: String = "Sandbox", busyTimeoutMilliseconds: Int? = nil) throws {
        folder = Scenario.temporaryFolder(name)
        try Data(Scenario.pki.rootPEM.utf8).write(to: folder.appendingPathComponent("root.pem"))
        configURL = folder.appendingPathComponent("config.json")
        try Data(
            Self.configText(maxInputBytes: maxInputBytes, environment: environment, busyTimeoutMilliseconds: busyTimeoutMilliseconds).utf8
        ).write(to: configURL)
    }

    deinit {
        if ProcessInfo.processInfo.environment["RELIABILITY_KEEP"] == nil {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    package static func configText(
        maxInputBytes: Int? = nil, environment: String = "Sandbox", root: String = "root.pem", busyTimeoutMilliseconds: Int? = nil
    ) -> String {
        JSONWriter.string(
            Scenario.configJSON(environment: environment, root: root, maxInputBytes: maxInputBytes, busyTimeoutMilliseconds: busyTimeoutMilliseconds))
    }

    package var configPath: String { configURL.path }
    package func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
    package func url(_ name: String) -> URL { folder.appendingPathComponent(name) }

    /// Writes `lines` as NDJSON.
    @discardableResult
    package func write(lines: [String], to name: String) throws -> URL {
        let url = self.url(name)
        var text = lines.joined(separator: "\n")
        text += "\n"
        try Data(text.utf8).write(to: url)
        return url
    }

    package func configuration() throws -> EngineConfiguration { try EngineConfiguration.load(path: configPath) }

    /// An engine (library) on the database `name`.
    package func engine(_ name: String, mode: DatabaseMode = .create) throws -> Engine {
        try Engine(configuration: configuration(), databasePath: path(name), mode: mode)
    }

    /// `entitlements COMMAND --db DB --config CONFIG ARGS...` run in this folder.
    @discardableResult
    package func cli(_ command: String, db: String, _ arguments: [String] = [], stdin: URL? = nil, timeout: Double = 300) throws -> Tool.Outcome {
        try Tool.run([command, "--db", db, "--config", configPath] + arguments, in: folder, stdin: stdin, timeout: timeout)
    }

    package func start(_ command: String, db: String, _ arguments: [String] = [], stdin: URL? = nil, label: String = "run") throws -> Tool.Running {
        try Tool.start([command, "--db", db, "--config", configPath] + arguments, in: folder, stdin: stdin, label: label)
    }

    /// Copies a database (and its WAL, if any) to `name`, as a backup tool that copies files would.
    package func copyDatabase(_ source: String, to name: String) throws -> String {
        let target = path(name)
        for suffix in ["", "-wal"] {
            let from = source + suffix
            guard FileManager.default.fileExists(atPath: from) else { continue }
            try? FileManager.default.removeItem(atPath: target + suffix)
            try FileManager.default.copyItem(atPath: from, toPath: target + suffix)
        }
        return target
    }
}
