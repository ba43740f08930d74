/// The App Store environments a customer's data came from (specification section 2):
/// a union, so it does not depend on the order events arrive in.
public struct EnvironmentSet: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let production = EnvironmentSet(rawValue: 1)
    public static let sandbox = EnvironmentSet(rawValue: 2)
    public static let xcode = EnvironmentSet(rawValue: 4)
    public static let localTesting = EnvironmentSet(rawValue: 8)
    /// Every bit a set may hold.
    static let known: UInt8 = 15

    /// The set holding `environment` alone (empty for `nil`: data logged before
    /// events recorded their environment).
    public init(_ environment: AppStoreEnvironment?) {
        switch environment {
        case .production?: self = .production
        case .sandbox?: self = .sandbox
        case .xcode?: self = .xcode
        case .localTesting?: self = .localTesting
        case nil: self = []
        }
    }

    /// The environments, in the order Production, Sandbox, Xcode, LocalTesting.
    /// Whether more than one known environment is in the set.
    public var hasSeveral: Bool { (rawValue & Self.known).nonzeroBitCount > 1 }

    public var environments: [AppStoreEnvironment] {
        AppStoreEnvironment.allCases.filter { contains(EnvironmentSet($0)) }
    }

    /// What a customer view shows as `environment`: the one environment's name,
    /// several joined by commas (`Production,Sandbox`), `nil` when none is known.
    public var displayName: String? {
        // One environment (most customers): its name, no list built.
        if !hasSeveral, let only = AppStoreEnvironment.allCases.first(where: { contains(EnvironmentSet($0)) }) { return only.rawValue }
        let names = environments.map(\.rawValue)
        return names.isEmpty ? nil : names.joined(separator: ",")
    }
}
