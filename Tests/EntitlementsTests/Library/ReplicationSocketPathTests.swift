import EntitlementCore
import Entitlements
import Foundation
import Testing

/// A relative `replication.litestream.socket` is found beside the configuration file,
/// however the file's own path was written (`../config.json` included).
@Suite struct ReplicationSocketPathTests {
    static func socketPath(_ socket: String, configurationPath: String) throws -> String? {
        let document: JSONValue = .object(
            JSONObject([
                ("bundleId", "com.example.app"), ("environment", "Sandbox"), ("rules", ["version": "1", "products": [:]]),
                ("replication", ["litestream": ["socket": .string(socket)]]),
            ]))
        let configuration = try EngineConfiguration(json: document, baseDirectory: EngineConfiguration.baseDirectory(of: configurationPath))
        return configuration.replication?.litestream.socketPath
    }

    @Test func aRelativeSocketIsBesideTheConfigurationFile() throws {
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let parent = here.deletingLastPathComponent().path
        #expect(try Self.socketPath("ls.sock", configurationPath: "../config.json") == (parent == "/" ? "/ls.sock" : parent + "/ls.sock"))
        #expect(try Self.socketPath("ls.sock", configurationPath: "config.json") == here.appendingPathComponent("ls.sock").path)
        #expect(try Self.socketPath("run/ls.sock", configurationPath: "/etc/entitlements/config.json") == "/etc/entitlements/run/ls.sock")
        #expect(try Self.socketPath("../run/ls.sock", configurationPath: "/etc/entitlements/config.json") == "/etc/run/ls.sock")
        #expect(try Self.socketPath("/run/litestream.sock", configurationPath: "../config.json") == "/run/litestream.sock")
    }
}
