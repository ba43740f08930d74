import EntitlementCore
import Entitlements
import Foundation
import TestPKI
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `serve` on an address it cannot listen on.
@Suite struct ServeListenTests {
    @Test("a port already in use: LISTEN_FAILED, exit 2, naming the address and suggesting --listen or serve.listen")
    func busyPort() throws {
        let workspace = try Workspace(name: "busy-port")
        let (descriptor, port) = try LoopbackListener.open()
        defer { close(descriptor) }
        let run = try workspace.cli("serve", db: "db.sqlite", ["--listen", "127.0.0.1:\(port)"], timeout: 60)
        #expect(run.status == 2, "\(run.status) \(run.stderr)")
        #expect(!run.signaled)
        #expect(run.stderr.contains("LISTEN_FAILED"), "\(run.stderr)")
        #expect(run.stderr.contains("127.0.0.1:\(port)"), "\(run.stderr)")
        #expect(run.stderr.contains("--listen") && run.stderr.contains("serve.listen"), "\(run.stderr)")
        let help = try E2E.run(["serve", "--help"]).stdout
        #expect(help.contains("LISTEN_FAILED"), "\(help)")
    }
}
