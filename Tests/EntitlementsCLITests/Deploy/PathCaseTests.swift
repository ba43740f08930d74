import Foundation
import Testing
import TestSupport

/// The package builds on a case-insensitive disk (macOS's default): no two paths in
/// the source tree differ only in case. `.ci/run` checks git's tracked paths the same
/// way (`scripts/check-path-case.sh`).
@Suite struct PathCaseTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The entries of each folder under `folder` whose names differ only in case, skipping
    /// build products and git's own folder.
    static func clashes(under folder: URL) throws -> [String] {
        let manager = FileManager.default
        let names = try manager.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".build") && $0 != ".git" }
        var found = Dictionary(grouping: names, by: { $0.lowercased() }).values.filter { $0.count > 1 }
            .map { folder.path + ": " + $0.sorted().joined(separator: ", ") }
        for name in names {
            var isFolder: ObjCBool = false
            let child = folder.appendingPathComponent(name)
            if manager.fileExists(atPath: child.path, isDirectory: &isFolder), isFolder.boolValue,
                (try? manager.destinationOfSymbolicLink(atPath: child.path)) == nil
            {
                found += try clashes(under: child)
            }
        }
        return found
    }

    @Test("no two paths of the source tree differ only in case")
    func noCaseClashes() throws {
        for top in ["Sources", "Tests", "Migrations", "Fixtures", "docs", "scripts", "Benchmarks"] {
            let folder = Self.root.appendingPathComponent(top)
            guard FileManager.default.fileExists(atPath: folder.path) else { continue }
            let clashes = try Self.clashes(under: folder)
            #expect(clashes.isEmpty, "paths that differ only in case: \(clashes)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.root.path).filter { !$0.hasPrefix(".") }
        let topLevel = Dictionary(grouping: names, by: { $0.lowercased() }).values.filter { $0.count > 1 }
        #expect(topLevel.isEmpty, "top-level paths that differ only in case: \(topLevel)")
    }

    @Test("the check finds a clash when there is one")
    func findsAClash() throws {
        let folder = Scenario.temporaryFolder("case")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Sources/Entitlements"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // On a case-insensitive disk the second folder is the first: nothing to find there.
        let second = folder.appendingPathComponent("Sources/entitlements")
        guard !FileManager.default.fileExists(atPath: second.path) else { return }
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        #expect(try Self.clashes(under: folder) == [folder.path + "/Sources: Entitlements, entitlements"])
    }
}
