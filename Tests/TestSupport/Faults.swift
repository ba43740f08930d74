import EventStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Ways to make the disk misbehave under the engine.
package enum Faults {
    /// Runs a shell command, returning its exit status.
    @discardableResult
    package static func sh(_ command: String) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    package static var isRoot: Bool { geteuid() == 0 }

    /// Whether this machine lets the tests mount a small tmpfs (root, and not forbidden by a container).
    package static let canMount: Bool = {
        guard isRoot else { return false }
        let probe = Scenario.temporaryFolder("mount-probe")
        defer { try? FileManager.default.removeItem(at: probe) }
        guard sh("mount -t tmpfs -o size=64k tmpfs '\(probe.path)'") == 0 else { return false }
        let remount = sh("mount -o remount,ro '\(probe.path)'") == 0
        sh("umount '\(probe.path)'")
        return remount
    }()

    /// Whether the tests can run a command as an unprivileged user (root drops to nobody with setpriv),
    /// so file permissions apply to it.
    package static let canDropPrivileges: Bool = isRoot && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// A tmpfs of `size` (e.g. "1m") mounted at `folder`, unmounted when released.
    package final class SmallDisk {
        package let folder: URL
        package init(at folder: URL, size: String) throws {
            self.folder = folder
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            guard sh("mount -t tmpfs -o size=\(size),mode=1777 tmpfs '\(folder.path)'") == 0 else {
                throw Failure(description: "cannot mount a tmpfs at \(folder.path)")
            }
        }
        package func remount(_ options: String) throws {
            guard sh("mount -o remount,\(options) '\(folder.path)'") == 0 else {
                throw Failure(description: "cannot remount \(folder.path) with \(options)")
            }
        }
        deinit { sh("umount -l '\(folder.path)'") }
    }

    /// Opens the database and closes it again, the last connection to it: SQLite then
    /// moves everything committed into the file and removes `-wal` and `-shm`.
    package static func closeCleanly(_ path: String) throws {
        do {
            let connection = try Connection(path: path, mode: .readWriteExisting)
            _ = try connection.scalarInt("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            throw Failure(description: "\(path)\(suffix) is still there after the last connection closed")
        }
    }

    /// Writes zeros to `file` until the disk holding it is full (ENOSPC).
    package static func fill(_ file: URL) throws {
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw Failure(description: "cannot create \(file.path)") }
        defer { close(fd) }
        let block = [UInt8](repeating: 0, count: 4096)
        while true {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { break }
        }
        guard errno == ENOSPC else { throw Failure(description: "filling \(file.path) stopped with errno \(errno), not ENOSPC") }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }
}
