import Foundation
import Testing

/// The core is pure: it compiles with the Swift standard library and its pure sibling
/// (JSON and base64) alone, so it can be reasoned about (and tested) without databases,
/// crypto or clocks. The sibling obeys the same rules.
@Suite("Purity")
struct PurityTests {
    /// Modules the pure targets may import: the standard library's own, and each other.
    static let allowed: Set<String> = ["Swift", "_Concurrency", "_StringProcessing", "Synchronization", "JSONAndBase64"]
    static let pureTargets = ["EntitlementCore", "JSONAndBase64"]
    static let forbidden = ["Foundation", "FoundationEssentials", "CSQLite", "COpenSSL", "Glibc", "Musl", "Darwin", "Dispatch"]

    static func sources(of target: String) -> URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/\(target)")
    }

    static func swiftFiles() throws -> [URL] {
        var files: [URL] = []
        for target in pureTargets { files += try swiftFiles(in: sources(of: target)) }
        return files
    }

    static func swiftFiles(in folder: URL) throws -> [URL] {
        let enumerator = FileManager.default.enumerator(at: folder.resolvingSymlinksInPath(), includingPropertiesForKeys: nil)
        var files: [URL] = []
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "swift" { files.append(url) }
        }
        return files
    }

    @Test func coreImportsNothingButTheStandardLibrary() throws {
        let files = try Self.swiftFiles()
        #expect(try Self.swiftFiles(in: Self.sources(of: "EntitlementCore")).count > 20)
        #expect(try Self.swiftFiles(in: Self.sources(of: "JSONAndBase64")).count >= 4)
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
