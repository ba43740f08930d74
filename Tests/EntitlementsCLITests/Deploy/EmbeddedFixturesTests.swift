import DemoFixtures
import Foundation
import Testing
import TestSupport

/// The demo samples are compiled into the program (scripts/embed-resources.sh): the
/// compiled copy must be exactly `Fixtures/demo` and `Fixtures/real`, byte for byte.
@Suite struct EmbeddedFixturesTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static let fix = "run scripts/embed-resources.sh and commit Fixtures/Embedded"

    @Test("every file of Fixtures/demo and Fixtures/real is compiled in, byte for byte, and nothing else")
    func compiledFixturesEqualTheFiles() throws {
        var paths: [String] = []
        for folder in ["demo", "real"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.appendingPathComponent(folder).path)
            paths += names.filter { !$0.hasSuffix(".md") }.map { folder + "/" + $0 }
        }
        paths.sort()
        #expect(paths.contains("demo/config.json") && paths.contains("demo/histories.ndjson"))
        for path in paths {
            let onDisk = try Data(contentsOf: Self.fixtures.appendingPathComponent(path))
            guard let text = DemoFixtures.text(path) else {
                Issue.record("Fixtures/\(path) is not compiled into the program: \(Self.fix)")
                continue
            }
            #expect(Data(text.utf8) == onDisk, "Fixtures/\(path) differs from its compiled copy in Fixtures/Embedded: \(Self.fix)")
        }
        for file in DemoFixtures.files where !paths.contains(file.path) {
            Issue.record("Fixtures/Embedded holds \(file.path), which is not in Fixtures/: \(Self.fix)")
        }
    }
}
