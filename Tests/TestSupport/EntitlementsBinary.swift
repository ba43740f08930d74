import Foundation

/// The `entitlements` executable the command-line tests run: `ENTITLEMENTS_BIN` when set,
/// else the one `swift test` built beside the test bundle (every product goes to the same
/// folder), else the package's default debug build.
package enum EntitlementsBinary {
    package static let url: URL = {
        let fileManager = FileManager.default
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["ENTITLEMENTS_BIN"] { candidates.append(URL(fileURLWithPath: path)) }
        var folders: [URL] = []
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            folders.append(folder)
            folder.deleteLastPathComponent()
        }
        if let url = Bundle.main.executableURL { folders.append(url.deletingLastPathComponent()) }
        folders.append(Bundle.main.bundleURL.deletingLastPathComponent())
        folders.append(Bundle.main.bundleURL)
        for bundle in Bundle.allBundles { folders.append(bundle.bundleURL.deletingLastPathComponent()) }
        for folder in folders {
            candidates.append(folder.appendingPathComponent("entitlements"))
            // Inside an .xctest bundle (Darwin layout): Contents/MacOS -> up three.
            candidates.append(folder.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("entitlements"))
        }
        let found = candidates.first { url in
            var isDirectory: ObjCBool = false
            return fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && fileManager.isExecutableFile(atPath: url.path)
        }
        return found ?? Scenario.packageRoot.appendingPathComponent(".build/debug/entitlements")
    }()

    /// ``url``'s path.
    package static var path: String { url.path }

    /// Whether ``url`` is an executable file.
    package static var exists: Bool { FileManager.default.isExecutableFile(atPath: url.path) }

    /// Another executable of the package built beside ``url`` (`entitlements-fixtures`), when there is one.
    package static func sibling(_ name: String) -> URL? {
        let candidate = url.deletingLastPathComponent().appendingPathComponent(name)
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }
}
