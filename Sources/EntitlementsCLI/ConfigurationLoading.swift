import Entitlements
import EntitlementsServer

extension EngineConfiguration {
    /// The configuration file as every command reads it: the engine's fields and, though
    /// only `serve` uses them, the `serve` section's values too, so that one file gets one
    /// answer everywhere (specification section 4).
    /// - Throws: ``ConfigurationError`` naming the field.
    static func loadChecked(path: String) throws(ConfigurationError) -> EngineConfiguration {
        let document = try EngineConfiguration.document(path: path)
        let configuration = try EngineConfiguration(json: document, baseDirectory: EngineConfiguration.baseDirectory(of: path))
        _ = try ServeSettings(configuration: document)
        return configuration
    }
}
