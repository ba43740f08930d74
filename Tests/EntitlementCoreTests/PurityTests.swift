import Foundation
import Testing

/// The core is pure: it compiles with the Swift standard library alone, so it
/// can be reasoned about (and tested) without databases, crypto or clocks.
@Suite("Purity")
struct PurityTests {
    /// Modules the core may import: the standard library's own.
    static let allowed: Set<String> = ["Swift", "_Concurrency", "_StringProcessing", "Synchronization"]
    static let forbidden = ["Foundation", "FoundationEssentials", "CSQLite", "COpenSSL", "Glibc", "Musl", "Darwin", "Dispatch"]

    static var coreSources: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/EntitlementCore")
    }

    static func swiftFiles() throws -> [URL] {
        let enumerator = FileManager.default.enumerator(at: coreSources.resolvingSymlinksInPath(), includingPropertiesForKeys: nil)
        var files: [URL] = []
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "swift" { files.append(url) }
        }
        return files
    }

    @Test func coreImportsNothingButTheStandardLibrary() throws {
        let files = try Self.swiftFiles()
        #expect(files.count > 20)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                // `import X`, `@testable import X`, `@_exported import X`, `import struct X.Y`, `#if canImport(X)`.
                let words = trimmed.split(separator: " ")
                if let index = words.firstIndex(of: "import"), words[..<index].allSatisfy({ $0.hasPrefix("@") || ["public", "internal", "package", "private", "fileprivate"].contains(String($0)) }) {
                    var module = words.count > index + 1 ? String(words[index + 1]) : ""
                    if ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(module), words.count > index + 2 {
                        module = String(words[index + 2])
                    }
                    module = String(module.split(separator: ".").first ?? "")
                    #expect(Self.allowed.contains(module), "\(file.lastPathComponent) imports \(module)")
                }
                for name in Self.forbidden where trimmed.contains("canImport(\(name))") {
                    Issue.record("\(file.lastPathComponent) reaches for \(name): \(trimmed)")
                }
            }
        }
    }

    @Test func coreReadsNoClockAndNoRandomness() throws {
        for file in try Self.swiftFiles() {
            let text = try String(contentsOf: file, encoding: .utf8)
            for needle in ["Date()", "ContinuousClock", "SuspendingClock", ".now", "random(", "SystemRandomNumberGenerator", "DispatchQueue", "FileManager", "getenv"] {
                #expect(!text.contains(needle), "\(file.lastPathComponent) uses \(needle)")
            }
        }
    }
}
