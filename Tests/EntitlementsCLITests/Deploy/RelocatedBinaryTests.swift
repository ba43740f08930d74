import Foundation
import Testing
import TestSupport

/// The binary is the deployment: copied alone to an empty folder, it runs `demo`,
/// `ingest` and `query` (schema and samples are compiled in; no resource bundle).
/// `.ci/run` runs the same script on the static release build.
@Suite struct RelocatedBinaryTests {
    @Test("the entitlements binary copied alone to an empty folder runs --version, demo, ingest and query")
    func binaryCopiedAloneWorks() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [root.appendingPathComponent("scripts/check-relocated.sh").path, E2E.binary.path]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(printed)\n\(errors)")
        #expect(printed.contains("relocated binary: --version, demo, ingest and query work"), "\(printed)\n\(errors)")
    }
}
