import EntitlementCore
import Entitlements
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// An input that never ends a line (`/dev/zero`) is answered and then given up:
    /// the process does not read it forever (specification section 18).
    @Suite("Endless input")
    struct EndlessInput {
        @Test("ingest /dev/zero as a file or as standard input: the line rejected, the input given up, exit 1 naming it",
              arguments: ["file", "stdin"])
        func endlessInputIsGivenUp(as source: String) throws {
            let workspace = try Workspace(name: "endless", maxInputBytes: 65_536)
            let zero = URL(fileURLWithPath: "/dev/zero")
            let running = try workspace.start(
                "ingest", db: "zero.sqlite", source == "file" ? [zero.path] : [], stdin: source == "stdin" ? zero : nil, label: "endless")
            // A generous deadline: the process must end on its own, however loaded the machine.
            let outcome = running.wait(timeout: 240)
            #expect(!outcome.signaled, "ingest of /dev/zero (\(source)) was still reading after \(Int(outcome.seconds)) s")
            #expect(outcome.status == 1, "exit \(outcome.status): \(outcome.stderr)")
            let results = outputObjects(outcome.stdout)
            #expect(results.count == 1 && text(results.first?["result"]) == "rejected", "\(outcome.stdout.prefix(300))")
            let name = source == "file" ? "/dev/zero" : "standard input"
            #expect(outcome.stderr.contains(name) && outcome.stderr.contains("stopped reading"), "\(outcome.stderr)")
            // The rejection was acknowledged, so it is committed.
            #expect(try Probe(workspace.path("zero.sqlite")).quarantineCount() == 1)
        }

        @Test("ingest /dev/zero good.ndjson: the endless file is given up, the next file is still ingested")
        func nextFileIsRead() throws {
            let workspace = try Workspace(name: "endless-next", maxInputBytes: 65_536)
            let history = History.generate(lines: 12, seed: 0xE0F)
            let accepted = history.lines.filter { $0.items.allSatisfy { if case .event = $0 { return true } else { return false } } }
            let good = try workspace.write(lines: accepted.map(\.text), to: "good.ndjson")
            let outcome = try workspace.start("ingest", db: "next.sqlite", ["/dev/zero", good.path], label: "next").wait(timeout: 240)
            #expect(!outcome.signaled, "still reading /dev/zero after \(Int(outcome.seconds)) s")
            #expect(outcome.status == 1 && outcome.stderr.contains("/dev/zero"), "exit \(outcome.status): \(outcome.stderr)")
            let results = outputObjects(outcome.stdout)
            #expect(results.first.map { text($0["result"]) == "rejected" } == true, "\(outcome.stdout.prefix(300))")
            #expect(try Probe(workspace.path("next.sqlite")).eventCount() == Int64(Set(accepted.flatMap(\.items)).count))
        }

        @Test("verify /dev/zero answers the endless line, then gives the input up: exit 1 naming it")
        func verifyGivesUp() throws {
            let workspace = try Workspace(name: "endless-verify", maxInputBytes: 65_536)
            let outcome = try Tool.start(["verify", "--config", workspace.configPath, "/dev/zero"], in: workspace.folder, label: "verify")
                .wait(timeout: 240)
            #expect(!outcome.signaled, "verify was still reading /dev/zero after \(Int(outcome.seconds)) s")
            #expect(outcome.status == 1 && outcome.stdout.contains("MALFORMED_INPUT") && outcome.stderr.contains("/dev/zero"),
                    "exit \(outcome.status): \(outcome.stdout.prefix(300)) \(outcome.stderr)")
        }
    }
}
