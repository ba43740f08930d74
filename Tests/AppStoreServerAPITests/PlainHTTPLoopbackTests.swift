@testable import AppStoreServerAPI
import EntitlementCore
import Entitlements
import Foundation
import Testing

/// Plain `http` carries the bearer token in clear text: `baseURL` may use it only for a
/// host whose address is loopback, judged by the address, not by how the name begins.
@Suite struct PlainHTTPLoopbackTests {
    func load(baseURL: String) throws -> Result<EngineConfiguration, ConfigurationError> {
        let folder = Tool.folder("loopback")
        let path = try Tool.writeConfig(in: folder, keyPath: "key.p8", baseURL: baseURL)
        do { return .success(try EngineConfiguration.load(path: path)) } catch { return .failure(error) }
    }

    @Test(arguments: ["http://127.0.0.1:9", "http://127.3.2.1:9", "http://[::1]:9", "http://localhost:9", "https://127.attacker.example"])
    func loopbackOrHTTPSIsAccepted(_ url: String) throws {
        switch try load(baseURL: url) {
        case .success(let configuration): #expect(configuration.appStoreServerAPI?.baseURL?.absoluteString == url)
        case .failure(let error): Issue.record("\(url) refused: \(error)")
        }
    }

    @Test(arguments: [
        "http://127.attacker.example", "http://127.0.0.1.attacker.example:9", "http://10.0.0.1", "http://[::2]:9",
        "http://localhost.attacker.example", "http://[::ffff:10.0.0.1]:9",
    ])
    func plainHTTPElsewhereIsAConfigurationErrorNamingTheURL(_ url: String) throws {
        guard case .failure(let error) = try load(baseURL: url) else {
            Issue.record("\(url) was accepted: the bearer token would travel in clear text")
            return
        }
        #expect(error.field == "appStoreServerAPI.baseURL")
        #expect(error.description.contains(url), "\(error)")
        #expect(error.message.contains("https"), "says what to do: \(error.message)")
    }

    @Test func theCommandExitsTwoNamingTheURL() throws {
        let folder = Tool.folder("loopback-cli")
        _ = try Tool.generateKey("key.p8", in: folder)
        let config = try Tool.writeConfig(in: folder, keyPath: "key.p8", baseURL: "http://127.attacker.example")
        let run = try Tool.entitlements(["sync", "--config", config, "--db", "db.sqlite", "--notifications"], in: folder)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("http://127.attacker.example"), "\(run.stderr)")
        #expect(run.stderr.contains("appStoreServerAPI.baseURL"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func addressesAreJudgedByValue() {
        for host in ["127.0.0.1", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1", "localhost", "LOCALHOST"] {
            #expect(HTTPClient.isLoopback(host), "\(host)")
        }
        for host in ["127.attacker.example", "127.0.0.1.nip.io", "128.0.0.1", "10.0.0.1", "::2", "::", "0.0.0.0", "::ffff:10.0.0.1", "", "127.1"] {
            #expect(!HTTPClient.isLoopback(host), "\(host)")
        }
    }

    /// Whatever a name resolves to by the time of the request, plain http connects only to loopback addresses.
    @Test func theClientConnectsOverPlainHTTPOnlyToLoopback() throws {
        var options = HTTPClient.Options()
        options.timeout = 10
        let client = try HTTPClient(options: options)
        #expect {
            _ = try client.send(HTTPRequest(method: "GET", url: URL(string: "http://10.0.0.1:9/")!))
        } throws: { error in
            guard let error = error as? HTTPClientError else { return false }
            return error.code == .connectionFailed && error.message.contains("loopback")
        }
    }
}
