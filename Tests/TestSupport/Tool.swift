import Foundation
import SystemCalls
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `entitlements` command line, run as a separate process, as production runs it.
package enum Tool {
    /// The built `entitlements` executable (``EntitlementsBinary``), `nil` when there is none.
    package static let executable: URL? = EntitlementsBinary.exists ? EntitlementsBinary.url : nil

    package struct Outcome {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        package var seconds: Double
        /// Killed by a signal (the status is then the signal number).
        package var signaled: Bool

        package var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    package struct Missing: Error, CustomStringConvertible {
        package init() {}
        package var description: String {
            "the entitlements executable was not found beside the test bundle (\(Bundle.main.bundleURL.path)); build it or set ENTITLEMENTS_BIN"
        }
    }

    /// A process started and not waited for; its output goes to files.
    package final class Running {
        package let process: Process
        package let stdoutURL: URL
        package let stderrURL: URL
        package let started = Date()
        package var pid: Int32 { process.processIdentifier }

        package init(process: Process, stdoutURL: URL, stderrURL: URL) {
            self.process = process
            self.stdoutURL = stdoutURL
            self.stderrURL = stderrURL
        }

        /// `kill -9`.
        package func kill9() { _ = SystemCalls.kill(process.processIdentifier, SIGKILL) }

        /// The pipe feeding standard input, for ``Tool/startOnOpenInput(_:in:input:label:)``.
        package var inputPipe: Pipe?

        /// Closes standard input (end of input) when it is a pipe.
        package func closeInput() { try? inputPipe?.fileHandleForWriting.close() }

        /// The process's peak resident set size so far (`VmHWM`, KiB), 0 when it has exited.
        /// A high-water mark: read after an event, it covers everything before it.
        package func peakKiB() -> Int {
            let status = String(decoding: Tool.read("/proc/\(pid)/status"), as: UTF8.self)
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                return Int(line.filter(\.isNumber)) ?? 0
            }
            return 0
        }

        /// Waits until the process has printed at least `lines` lines (or has exited, or
        /// `timeout` seconds passed); whether it printed them.
        @discardableResult
        package func waitForOutput(lines: Int, timeout: Double = 120) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if Tool.read(stdoutURL.path).lazy.filter({ $0 == 0x0A }).count >= lines { return true }
                if !process.isRunning || Date() > deadline { return false }
                usleep(1_000)
            }
        }

        /// Whether the process has the file at `path` open (Linux: a link in /proc/PID/fd).
        package func hasOpen(_ path: String) -> Bool {
            let folder = "/proc/\(pid)/fd"
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return false }
            let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            return entries.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")) == target }
        }

        /// Waits until `condition` holds while the process runs (or `timeout` seconds pass);
        /// whether it held.
        package func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while !condition() {
                if !process.isRunning || Date() > deadline { return false }
                usleep(1_000)
            }
            return true
        }

        /// Waits at most `timeout` seconds for the process to exit; whether it did.
        package func waitForExit(timeout: Double) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning {
                if Date() > deadline { return false }
                usleep(1_000)
            }
            return true
        }

        /// Waits for the process (killing it after `timeout` seconds) and collects its output.
        package func wait(timeout: Double = 300) -> Outcome {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning {
                if Date() > deadline {
                    kill9()
                    break
                }
                usleep(2_000)
            }
            process.waitUntilExit()
            let out = String(decoding: Tool.read(stdoutURL.path), as: UTF8.self)
            let err = String(decoding: Tool.read(stderrURL.path), as: UTF8.self)
            return Outcome(
                status: process.terminationStatus, stdout: out, stderr: err,
                seconds: Date().timeIntervalSince(started), signaled: process.terminationReason == .uncaughtSignal)
        }
    }

    /// Starts `entitlements ARGUMENTS` (or, with `shell`, `/bin/sh -c SCRIPT` with
    /// `$ENTITLEMENTS` set), output to files in `folder`, standard input from `stdin`
    /// (a file) or nothing.
    package static func start(
        _ arguments: [String], in folder: URL, stdin: URL? = nil, stdinPipe: Pipe? = nil, shell: String? = nil, label: String = "run"
    ) throws -> Running {
        guard let executable else { throw Missing() }
        let process = Process()
        if let shell {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", shell, "sh"] + arguments
            var environment = ProcessInfo.processInfo.environment
            environment["ENTITLEMENTS"] = executable.path
            process.environment = environment
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.currentDirectoryURL = folder
        let tag = "\(label)-\(UUID().uuidString.prefix(8))"
        let stdoutURL = folder.appendingPathComponent("\(tag).out")
        let stderrURL = folder.appendingPathComponent("\(tag).err")
        for url in [stdoutURL, stderrURL] where !FileManager.default.createFile(atPath: url.path, contents: nil) {
            throw Faults.Failure(description: "cannot create \(url.path)")
        }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        if let stdinPipe {
            process.standardInput = stdinPipe
        } else if let stdin {
            process.standardInput = try FileHandle(forReadingFrom: stdin)
        } else {
            process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        }
        try process.run()
        return Running(process: process, stdoutURL: stdoutURL, stderrURL: stderrURL)
    }

    /// A file's bytes, read with POSIX calls (this Foundation's file readers leak their
    /// buffers under LeakSanitizer, which would fail a sanitizer run of the suite).
    package static func read(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { SystemCalls.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    /// Starts `entitlements ARGUMENTS` in `folder` with standard input a pipe that a thread
    /// of its own fills with `input`'s bytes and then leaves open: the process has read
    /// everything and waits for more, so its peak memory can be read at that moment
    /// (``Running/peakKiB()``) instead of sampled while it runs. ``Running/closeInput()``
    /// lets it finish.
    package static func startOnOpenInput(_ arguments: [String], in folder: URL, input: URL, label: String = "open") throws -> Running {
        // A process that exits early must not take the test runner down with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let pipe = Pipe()
        let running = try start(arguments, in: folder, stdinPipe: pipe, label: label)
        let bytes = read(input.path)
        let writer = pipe.fileHandleForWriting
        Thread {
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + (1 << 20), bytes.count)
                do { try writer.write(contentsOf: Data(bytes[offset..<end])) } catch { return }
                offset = end
            }
        }.start()
        running.inputPipe = pipe
        return running
    }

    /// Runs `entitlements ARGUMENTS` to completion.
    @discardableResult
    package static func run(_ arguments: [String], in folder: URL, stdin: URL? = nil, shell: String? = nil, timeout: Double = 300) throws -> Outcome {
        try start(arguments, in: folder, stdin: stdin, shell: shell).wait(timeout: timeout)
    }
}
