import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium (Debian's `chromium`), driven from its command line: the DOM a page
/// has once its scripts are done (`--dump-dom`), and screenshots. Tests that need it are
/// enabled only when ``executable`` is found, and say so when it is not.
package enum Chromium {
    /// The browser on `PATH` (`chromium`, `chromium-browser`, `google-chrome`), or `nil`.
    package static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            for folder in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
                return "\(folder)/\(name)"
            }
        }
        return nil
    }()

    /// Why a browser test is skipped.
    package static let missingNotice = "Chromium is not installed (apt-get install chromium): the dashboard's browser tests are skipped"

    /// Where the screenshots are kept: `.build/artifacts/dashboard` in the package.
    package static let artifacts: URL = Scenario.packageRoot.appendingPathComponent(".build/artifacts/dashboard")

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The page's DOM, serialized, once it has loaded and its requests are answered
    /// (virtual time runs only while no request is pending).
    package static func dumpDOM(_ url: String, width: Int = 1280, height: Int = 900) throws -> String {
        let outcome = try run(["--dump-dom", url], width: width, height: height)
        guard outcome.status == 0, !outcome.stdout.isEmpty else {
            throw Failure(description: "chromium --dump-dom \(url) exited \(outcome.status): \(outcome.stderr.suffix(2000))")
        }
        return outcome.stdout
    }

    /// A PNG of the page's viewport, `width` × `height` CSS pixels, written to `path`.
    package static func screenshot(_ url: String, width: Int, height: Int, to path: URL) throws {
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: path)
        let outcome = try run(["--hide-scrollbars", "--screenshot=\(path.path)", url], width: width, height: height)
        guard outcome.status == 0, FileManager.default.fileExists(atPath: path.path) else {
            throw Failure(description: "chromium --screenshot \(url) exited \(outcome.status): \(outcome.stderr.suffix(2000))")
        }
    }

    private static func run(_ arguments: [String], width: Int, height: Int) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let executable else { throw Failure(description: missingNotice) }
        let folder = Scenario.temporaryFolder("chromium")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--metrics-recording-only", "--mute-audio", "--force-device-scale-factor=1",
            "--user-data-dir=\(folder.appendingPathComponent("profile").path)", "--window-size=\(width),\(height)",
            "--virtual-time-budget=30000",
        ] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = folder.path
        process.environment = environment
        let stdoutURL = folder.appendingPathComponent("out")
        let stderrURL = folder.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        let deadline = Date().addingTimeInterval(180)
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(5_000)
        }
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: Tool.read(stdoutURL.path), as: UTF8.self),
            String(decoding: Tool.read(stderrURL.path), as: UTF8.self)
        )
    }

    // MARK: Reading a dumped DOM

    /// The elements' opening tags that carry `attribute` (e.g. `data-entitlement="pro"`), in order.
    package static func tags(in dom: String, with attribute: String) -> [String] {
        var result: [String] = []
        var rest = dom[...]
        while let range = rest.range(of: attribute) {
            guard let open = rest[..<range.lowerBound].lastIndex(of: "<"), let close = rest[range.upperBound...].firstIndex(of: ">") else { break }
            result.append(String(rest[open...close]))
            rest = rest[rest.index(after: close)...]
        }
        return result
    }

    /// The value of `name` in an opening tag, with the serializer's entities decoded.
    package static func attribute(_ name: String, of tag: String) -> String? {
        guard let range = tag.range(of: " \(name)=\"") else { return nil }
        let rest = tag[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return decodeEntities(String(rest[..<end]))
    }

    /// The text of the element that starts with `tag` in `dom` (tags dropped, entities decoded).
    package static func text(of tag: String, in dom: String) -> String? {
        guard let start = dom.range(of: tag), let name = tag.dropFirst().split(whereSeparator: { $0 == " " || $0 == ">" }).first else { return nil }
        var depth = 1
        var index = start.upperBound
        var text = ""
        while index < dom.endIndex {
            if dom[index] == "<" {
                guard let close = dom[index...].firstIndex(of: ">") else { break }
                let inner = dom[dom.index(after: index)..<close]
                if inner.hasPrefix("/\(name)") {
                    depth -= 1
                    if depth == 0 { return decodeEntities(text) }
                } else if inner.hasPrefix(name) && (inner.count == name.count || inner.dropFirst(name.count).first == " ") {
                    depth += 1
                }
                index = dom.index(after: close)
            } else {
                text.append(dom[index])
                index = dom.index(after: index)
            }
        }
        return nil
    }

    /// `&lt;`, `&gt;`, `&quot;`, `&#39;`, `&nbsp;` and `&amp;` decoded.
    package static func decodeEntities(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&nbsp;", with: "\u{A0}").replacingOccurrences(of: "&amp;", with: "&")
    }
}
