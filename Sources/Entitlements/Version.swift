extension Engine {
    /// The engine's version, as `entitlements --version` prints it.
    public static let version = "1.0.0"
}
