import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport

/// The `serve` section's field names and values, checked by every command that reads the configuration.
@Suite struct ServeFieldNamesTests {
    @Test("a serve field unknown to serve is a configuration error naming it in every command, exit 2")
    func unknownServeField() throws {
        let workspace = try Workspace(name: "serve-field")
        let text = Workspace.configText()
        #expect(text.hasPrefix("{"))
        try Data(("{\"serve\":{\"listen\":\"127.0.0.1:0\",\"tokn\":\"s3cret-token-0123456789\"}," + text.dropFirst()).utf8).write(to: workspace.configURL)
        var answers: [String] = []
        for arguments in [["query", "--app-transaction-id", "1"], ["ingest"], ["serve"], ["changes"], ["audit"]] {
            let run = try workspace.cli(arguments[0], db: "db.sqlite", Array(arguments.dropFirst()), timeout: 60)
            #expect(run.status == 2, "\(arguments[0]): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains("serve.tokn"), "\(arguments[0]): \(run.stderr)")
            if let line = run.stderr.split(separator: "\n").first(where: { $0.contains("serve.tokn") }) {
                answers.append(String(line.drop { $0 != ":" }))
            }
        }
        // The same file, the same answer everywhere.
        #expect(Set(answers).count == 1, "\(answers)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("db.sqlite")))
    }

    @Test("a serve value of the wrong type or out of range is a configuration error naming it in every command, exit 2")
    func badServeValue() throws {
        let text = Workspace.configText()
        let cases: [(section: String, field: String)] = [
            (#"{"listen":5}"#, "serve.listen"),
            (#"{"listen":"nope"}"#, "serve.listen"),
            (#"{"maxConnections":"many"}"#, "serve.maxConnections"),
            (#"{"token":""}"#, "serve.token"),
        ]
        for (section, field) in cases {
            let workspace = try Workspace(name: "serve-value")
            try Data(("{\"serve\":" + section + "," + text.dropFirst()).utf8).write(to: workspace.configURL)
            var answers: [String] = []
            for arguments in [["query", "--app-transaction-id", "1"], ["ingest"], ["verify"], ["serve"], ["audit"]] {
                let run = arguments[0] == "verify"
                    ? try Tool.run(["verify", "--config", workspace.configPath, "/dev/null"], in: workspace.folder, timeout: 60)
                    : try workspace.cli(arguments[0], db: "db.sqlite", Array(arguments.dropFirst()), timeout: 60)
                #expect(run.status == 2, "\(section) \(arguments[0]): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(field), "\(section) \(arguments[0]): \(run.stderr)")
                if let line = run.stderr.split(separator: "\n").first(where: { $0.contains(field) }) {
                    answers.append(String(line.drop { $0 != ":" }))
                }
            }
            #expect(Set(answers).count == 1, "\(answers)")
            #expect(!FileManager.default.fileExists(atPath: workspace.path("db.sqlite")))
        }
    }
}
