import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An ext4 file system on a loop device backed by an image file, mounted at a folder;
/// unmounted and detached when released.
package final class LoopDisk {
    package let folder: URL
    private var device: String?

    /// Whether loop devices can be made and mounted here; when not, prints why.
    package static let available: Bool = {
        guard let reason = unavailability() else { return true }
        print("Power loss tests skipped: \(reason)")
        return false
    }()

    private static func unavailability() -> String? {
        guard Faults.isRoot else { return "not running as root" }
        for tool in ["/usr/sbin/losetup", "/usr/sbin/mkfs.ext4", "/usr/bin/mount", "/usr/bin/umount"]
        where !FileManager.default.isExecutableFile(atPath: tool) && !FileManager.default.isExecutableFile(atPath: tool.replacingOccurrences(of: "/usr", with: "")) {
            return "\(tool) is not installed (util-linux, e2fsprogs)"
        }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("loop-probe-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: probe) }
        do {
            let disk = try LoopDisk(image: probe.appendingPathComponent("probe.img"), mountedAt: probe.appendingPathComponent("mnt"), size: "8M")
            disk.detach()
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Makes an image of `size`, an ext4 file system on it, and mounts it at `folder`.
    package convenience init(image: URL, mountedAt folder: URL, size: String = "256M") throws {
        try Self.run("truncate -s \(size) '\(image.path)'")
        try Self.run("mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 '\(image.path)'")
        try self.init(attaching: image, mountedAt: folder)
    }

    /// Attaches the image `image` to a loop device that writes straight to it (no page
    /// cache of its own in between) and mounts it at `folder`.
    package init(attaching image: URL, mountedAt folder: URL) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let device = try Self.output("losetup --direct-io=on --find --show '\(image.path)'")
        self.device = device
        do {
            try Self.run("mount -t ext4 '\(device)' '\(folder.path)'")
        } catch {
            Faults.sh("losetup -d '\(device)'")
            self.device = nil
            throw error
        }
    }

    /// Copies the backing image as the device holds it now, without syncing anything.
    package func snapshot(to target: URL) throws {
        guard let device else { throw Faults.Failure(description: "the loop disk is detached") }
        let backing = try Self.output("losetup --noheadings --output BACK-FILE '\(device)'")
        try Self.run("cp --sparse=always '\(backing)' '\(target.path)'")
    }

    /// Unmounts (lazily) and detaches the loop device.
    package func detach() {
        guard let device else { return }
        Faults.sh("umount -l '\(folder.path)'")
        Faults.sh("losetup -d '\(device)'")
        self.device = nil
    }

    deinit { detach() }

    private static func run(_ command: String) throws {
        let status = Faults.sh(command)
        guard status == 0 else { throw Faults.Failure(description: "\(command) failed (exit \(status))") }
    }

    /// The command's standard output, trimmed.
    private static func output(_ command: String) throws -> String {
        let process = Process()
        let out = Pipe()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, !text.isEmpty else {
            throw Faults.Failure(description: "\(command) failed (exit \(process.terminationStatus))")
        }
        return text
    }
}
