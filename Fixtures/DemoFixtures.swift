import Foundation

/// The signed samples that travel with the program: the demo's histories (made with the
/// test PKI in `Fixtures/pki`) and real Apple-signed payloads.
public enum DemoFixtures {
    /// The folder holding the demo histories and their `config.json`.
    public static var demoFolder: URL? { Bundle.module.url(forResource: "demo", withExtension: nil) }
    /// The folder holding the real Apple-signed samples.
    public static var realFolder: URL? { Bundle.module.url(forResource: "real", withExtension: nil) }
}
