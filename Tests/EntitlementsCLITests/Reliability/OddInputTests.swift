import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// Inputs that are not hostile, only odd: endless, with a byte order mark,
    /// with classic Mac line ends, or a list of files with a typo in it.
    @Suite("Odd inputs")
    struct OddInputs {
        /// Waits (bounded) until `running` has printed a line containing `text`, or has exited.
        static func waitForOutput(_ running: Tool.Running, containing text: String, timeout: Double = 120) -> String {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let out = String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self)
                if out.contains(text) || !running.process.isRunning { return out }
                usleep(20_000)
            }
            return String(decoding: Tool.read(running.stdoutURL.path), as: UTF8.self)
        }

        @Test("/dev/zero as a file or as standard input: one line rejected and acknowledged once it runs past the limit, memory bounded",
              arguments: ["file", "stdin"])
        func endlessInputIsRejectedAndAcknowledged(as source: String) throws {
            let workspace = try Workspace(name: "zero", maxInputBytes: 65_536)
            let zero = URL(fileURLWithPath: "/dev/zero")
            let running = try workspace.start(
                "ingest", db: "zero.sqlite", source == "file" ? [zero.path] : [], stdin: source == "stdin" ? zero : nil, label: "zero")
            let out = Self.waitForOutput(running, containing: "\"rejected\"")
            // A high-water mark, read once the line was answered, while the rest of it is skipped
            // (0 once the input was given up and the process exited: `EndlessInput`).
            let peak = running.peakKiB()
            let outcome = running.wait(timeout: 240)
            #expect(!outcome.signaled && outcome.status == 1, "ingest of /dev/zero: exit \(outcome.status) \(outcome.stderr)")
            let results = outputObjects(out)
            #expect(results.count == 1 && text(results.first?["result"]) == "rejected", "no acknowledgment for the endless line: \(out.prefix(300)) \(outcome.stderr)")
            let message = text(results.first?["error"]?["message"]) ?? ""
            #expect(message.contains("not read to its end") && message.contains("exceeds the limit of 65536"), "\(message)")
            // Acknowledged means committed: it is in quarantine, cut to the limit.
            let stored = try Probe(workspace.path("zero.sqlite")).strings("SELECT length(raw) || ' ' || (size > 65536) FROM quarantine")
            #expect(stored == ["65536 1"], "\(stored)")
            #expect(peak < 256 * 1024, "ingest of /dev/zero peaked at \(peak) KiB")
        }

        @Test("verify of /dev/zero answers the endless line")
        func verifyOfEndlessInputAnswers() throws {
            let workspace = try Workspace(name: "zero-verify", maxInputBytes: 65_536)
            let running = try Tool.start(["verify", "--config", workspace.configPath, "/dev/zero"], in: workspace.folder, label: "verify")
            let out = Self.waitForOutput(running, containing: "exceeds the limit")
            _ = running.wait(timeout: 240)
            #expect(out.contains("MALFORMED_INPUT"), "\(out.prefix(300))")
        }

        @Test("a UTF-8 byte order mark before a document is skipped, in a file, on a line, on standard input")
        func byteOrderMarkIsSkipped() throws {
            let workspace = try Workspace(name: "bom")
            let history = History.generate(lines: 12, seed: 0xB0B)
            let accepted = history.lines.filter { $0.items.allSatisfy { if case .event = $0 { return true } else { return false } } }
            let bom = "\u{FEFF}"
            // Every line starts with a BOM (files concatenated from an editor's output).
            let lines = accepted.map { bom + $0.text }
            let file = try workspace.write(lines: lines, to: "bom.ndjson")
            #expect(Tool.read(file.path).prefix(3) == [0xEF, 0xBB, 0xBF])
            let ingest = try workspace.cli("ingest", db: "bom.sqlite", [file.path])
            #expect(ingest.status == 0, "\(ingest.stdout.prefix(400)) \(ingest.stderr)")
            expectOutcomes(ingest.stdout, for: accepted)
            let viaStdin = try workspace.cli("ingest", db: "bom-stdin.sqlite", [], stdin: file)
            #expect(viaStdin.status == 0, "\(viaStdin.stdout.prefix(400))")
            expectOutcomes(viaStdin.stdout, for: accepted)
            // A whole (indented, multi-line) document with a BOM.
            let whole = try workspace.write(lines: [bom + "{", "  \"signedTransactions\": []", "}"], to: "whole.json")
            let page = try workspace.cli("ingest", db: "bom.sqlite", [whole.path])
            #expect(page.status == 0 && !page.stdout.contains("rejected"), "\(page.stdout) \(page.stderr)")
        }

        @Test("line ends: LF, CRLF and a lone CR (classic Mac) each end one line, in a file and on standard input")
        func carriageReturnEndsALine() throws {
            let workspace = try Workspace(name: "cr")
            let history = History.generate(lines: 40, seed: 0x0D0A)
            for (name, separator) in [("cr", "\r"), ("crlf", "\r\n"), ("lf", "\n")] {
                let url = workspace.url("\(name).ndjson")
                try Data((history.lines.map(\.text).joined(separator: separator) + separator).utf8).write(to: url)
                for viaStdin in [false, true] {
                    let database = "\(name)-\(viaStdin ? "stdin" : "file").sqlite"
                    let outcome = try workspace.cli("ingest", db: database, viaStdin ? [] : [url.path], stdin: viaStdin ? url : nil)
                    #expect(outcome.status == 1, "\(name) \(viaStdin): \(outcome.stderr)")
                    expectOutcomes(outcome.stdout, for: history.lines)
                    #expect(try Probe(workspace.path(database)).eventCount() == Int64(history.identities.count), "\(name) \(viaStdin)")
                }
            }
        }

        @Test("ingest of a named pipe whose writer already waits for its reader: every line ingested, the writer not cut off",
              arguments: ["ingest", "verify"])
        func namedPipeWithWaitingWriter(command: String) throws {
            let workspace = try Workspace(name: "fifo-\(command)")
            let history = History.generate(lines: 12, seed: 0xF1F0)
            let accepted = history.lines.filter { $0.items.allSatisfy { if case .event = $0 { return true } else { return false } } }
            let good = try workspace.write(lines: accepted.map(\.text), to: "good.ndjson")
            let pipePath = workspace.path("input.pipe")
            #expect(mkfifo(pipePath, 0o600) == 0)
            // The writer opens the pipe first, as a producer started before the engine does,
            // and waits in open() for a reader.
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", "exec cat \"$0\" > \"$1\"", good.path, pipePath]
            try writer.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let channel = String(decoding: Tool.read("/proc/\(writer.processIdentifier)/wchan"), as: UTF8.self)
                if channel == "wait_for_partner" || channel == "fifo_open" { break }
                usleep(1_000)
            }
            let arguments = command == "ingest"
                ? ["ingest", "--db", workspace.path("fifo.sqlite"), "--config", workspace.configPath, pipePath]
                : ["verify", "--config", workspace.configPath, pipePath]
            let outcome = try Tool.start(arguments, in: workspace.folder, label: "fifo").wait(timeout: 120)
            if writer.isRunning { writer.terminate() }
            writer.waitUntilExit()
            #expect(!outcome.signaled && outcome.status == 0, "\(command): exit \(outcome.status) \(outcome.stderr)")
            #expect(writer.terminationReason == .exit && writer.terminationStatus == 0,
                    "the writer ended with \(writer.terminationStatus) (\(writer.terminationReason == .uncaughtSignal ? "signal" : "exit"))")
            // As many answers as the same lines read from a regular file give.
            let fromFile = try Tool.run(
                command == "ingest"
                    ? ["ingest", "--db", workspace.path("file.sqlite"), "--config", workspace.configPath, good.path]
                    : ["verify", "--config", workspace.configPath, good.path],
                in: workspace.folder)
            #expect(fromFile.status == 0 && !outputObjects(fromFile.stdout).isEmpty, "\(fromFile.stderr)")
            #expect(outputObjects(outcome.stdout).count == outputObjects(fromFile.stdout).count,
                    "\(command): \(outcome.stdout.prefix(300)) \(outcome.stderr)")
            if command == "ingest" {
                #expect(try Probe(workspace.path("fifo.sqlite")).eventCount() == Int64(Set(accepted.flatMap(\.items)).count))
            }
        }

        @Test("ingest a.ndjson missing.ndjson (or a folder): usage error naming it, exit 2, nothing committed, no database created")
        func everyInputFileIsCheckedFirst() throws {
            let workspace = try Workspace(name: "missing-input")
            let history = History.generate(lines: 10, seed: 0xA)
            let good = try workspace.write(lines: history.lines.map(\.text), to: "a.ndjson")
            try FileManager.default.createDirectory(at: workspace.url("folder"), withIntermediateDirectories: true)
            for (command, bad) in [("ingest", "missing.ndjson"), ("ingest", "folder"), ("verify", "missing.ndjson"), ("verify", "folder")] {
                let args = command == "ingest"
                    ? ["ingest", "--db", workspace.path("db.sqlite"), "--config", workspace.configPath, good.path, workspace.path(bad)]
                    : ["verify", "--config", workspace.configPath, good.path, workspace.path(bad)]
                let outcome = try Tool.run(args, in: workspace.folder)
                #expect(outcome.status == 2, "\(command) \(bad): exit \(outcome.status) \(outcome.stderr)")
                #expect(outcome.stderr.contains(workspace.path(bad)), "\(command) \(bad): \(outcome.stderr)")
                #expect(outcome.stdout.isEmpty, "\(command) \(bad) printed \(outcome.stdout.prefix(200))")
                #expect(!FileManager.default.fileExists(atPath: workspace.path("db.sqlite")), "\(command) \(bad) created the database")
            }
        }
    }
}
