import Foundation
import Testing
import TestSupport

/// `entitlements-fixtures`, run as the built program: it writes only into the folder
/// `--out` names, `--help` writes nothing, and an unknown argument is a usage error.
@Suite("Fixture maker")
struct FixtureMakerTests {
    /// The built `entitlements-fixtures`, beside the `entitlements` the tests run.
    static let executable: URL? = EntitlementsBinary.sibling("entitlements-fixtures")

    struct Missing: Error, CustomStringConvertible {
        var description: String { "entitlements-fixtures was not found beside the test bundle; build it (swift build --build-tests)" }
    }

    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// A fresh empty folder under the temporary directory.
    static func emptyFolder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("fixture-maker-\(name)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs the program with `arguments` in `folder` (its working directory).
    static func run(_ arguments: [String], in folder: URL) throws -> Outcome {
        guard let executable else { throw Missing() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let outURL = folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + ".stdout")
        let errURL = folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + ".stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Outcome(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    static func contents(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test("--help prints the usage and writes nothing in its working directory")
    func helpWritesNothing() throws {
        let folder = try Self.emptyFolder("help")
        defer { try? FileManager.default.removeItem(at: folder) }
        for flag in ["--help", "-h"] {
            let outcome = try Self.run([flag], in: folder)
            #expect(outcome.status == 0, "\(flag): \(outcome.stderr)")
            #expect(outcome.stdout.hasPrefix("usage: entitlements-fixtures --out DIR"), "\(flag)")
            #expect(outcome.stdout.contains("--out DIR"))
            let written = try Self.contents(folder)
            #expect(written.isEmpty, "\(flag) wrote \(written)")
        }
    }

    @Test("an unknown argument, or no --out, is a usage error (exit 2) that writes nothing")
    func unknownArgumentsAreRefused() throws {
        let folder = try Self.emptyFolder("refused")
        defer { try? FileManager.default.removeItem(at: folder) }
        for arguments in [["--bogus"], [], ["--out"], ["Fixtures"], ["--out", "x", "extra"]] {
            let outcome = try Self.run(arguments, in: folder)
            #expect(outcome.status == 2, "\(arguments)")
            #expect(outcome.stderr.contains("usage: entitlements-fixtures --out DIR"), "\(arguments)")
            #expect(outcome.stdout.isEmpty, "\(arguments)")
            let written = try Self.contents(folder)
            #expect(written.isEmpty, "\(arguments) wrote \(written)")
        }
    }

    @Test("--out DIR writes the PKI and the demo histories there, and nothing in the working directory")
    func outWritesThereOnly() throws {
        let workingDirectory = try Self.emptyFolder("cwd")
        let out = try Self.emptyFolder("out")
        defer {
            try? FileManager.default.removeItem(at: workingDirectory)
            try? FileManager.default.removeItem(at: out)
        }
        let target = out.appendingPathComponent("made")
        let outcome = try Self.run(["--out", target.path], in: workingDirectory)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("wrote "))
        let stray = try Self.contents(workingDirectory)
        #expect(stray.isEmpty, "wrote \(stray) in the working directory")
        #expect(try Self.contents(target) == ["demo", "pki"])
        #expect(try Self.contents(target.appendingPathComponent("demo")) == ["config.json", "histories.ndjson", "test-root.pem", "tour.json"])
        #expect(try Self.contents(target.appendingPathComponent("pki")).contains("root.pem"))
        let histories = try String(contentsOf: target.appendingPathComponent("demo/histories.ndjson"), encoding: .utf8)
        #expect(histories.split(separator: "\n").count > 10)
        // A second run reuses the PKI it made: the root stays the same.
        let root = try Data(contentsOf: target.appendingPathComponent("pki/root.pem"))
        #expect(try Self.run(["--out=" + target.path], in: workingDirectory).status == 0)
        #expect(try Data(contentsOf: target.appendingPathComponent("pki/root.pem")) == root)
        #expect(try Data(contentsOf: target.appendingPathComponent("demo/test-root.pem")) == root)
    }
}
