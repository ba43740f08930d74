import Entitlements
import EntitlementsServer
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `entitlements demo --serve`: the demo's database behind `serve`, for its dashboard.
extension Demo {
    /// The settings `--serve [--listen HOST:PORT]` ask for, or `nil` without `--serve`.
    static func serveSettings(_ arguments: Arguments) throws(UsageError) -> ServeSettings? {
        let serve = arguments.flags.contains("--serve")
        var settings = ServeSettings()
        _ = settings.setListen("127.0.0.1:0")
        if let text = arguments.values["--listen"] {
            guard serve else { throw UsageError(message: "--listen is for --serve", command: "demo") }
            guard settings.setListen(text) else {
                throw UsageError(message: "--listen expects HOST:PORT with a numeric address, e.g. 127.0.0.1:8080, got \(text)", command: "demo")
            }
            guard !settings.needsTokenToListen else {
                throw UsageError(
                    message: "--listen \(text) is not a loopback address: the demo serves without a token, so only on 127.0.0.1 or ::1", command: "demo")
            }
        }
        return serve ? settings : nil
    }

    /// Serves the demo's engine until SIGINT or SIGTERM, after printing the dashboard's address.
    static func serveDashboard(_ engine: Engine, settings: ServeSettings) -> ExitCode {
        let server: Server
        do {
            server = try Server(engine: engine, settings: settings, log: nil)
        } catch {
            Output.error("entitlements demo: \(error.code): \(error.message); choose another address with --listen HOST:PORT")
            return .usage
        }
        server.stopOnSignals()
        let host = server.address.host.contains(":") ? "[\(server.address.host)]" : server.address.host
        print("\nServing this database (Ctrl-C to stop):")
        print("Dashboard: http://\(host):\(server.address.port)/")
        fflush(nil)
        do {
            try server.run()
        } catch {
            Output.error("entitlements demo: \(error.code): \(error.message)")
            return .storage
        }
        return .success
    }
}
