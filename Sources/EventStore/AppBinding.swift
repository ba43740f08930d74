import EntitlementCore

/// The app a database belongs to (specification section 2).
public struct AppBinding: Sendable, Hashable {
    /// Whether a database holds data signed by Apple or StoreKit testing data.
    public enum DataClass: String, Sendable, Hashable {
        /// Production and Sandbox.
        case signed
        /// Xcode and LocalTesting.
        case unsigned

        /// The class of `environments` (all of one class; see the configuration).
        public init(_ environments: [AppStoreEnvironment]) {
            self = environments.contains(where: \.isLocal) ? .unsigned : .signed
        }

        /// How the message names the class.
        var described: String {
            switch self {
            case .signed: return "signed data (Production/Sandbox)"
            case .unsigned: return "unsigned data (Xcode/LocalTesting)"
            }
        }
    }

    public var bundleId: String
    public var dataClass: DataClass
    /// Every environment configured so far, in the order first configured.
    public var environments: [String]

    public init(bundleId: String, dataClass: DataClass, environments: [String]) {
        self.bundleId = bundleId
        self.dataClass = dataClass
        self.environments = environments
    }
}

extension EventStore {
    /// The app the database belongs to, or `nil` before any command bound it.
    public func appBinding() throws(StoreError) -> AppBinding? {
        try mapped { try readBinding() }
    }

    private func readBinding() throws -> AppBinding? {
        let statement = try connection.cached("SELECT bundle_id, data_class, environments FROM app_binding WHERE id = 1")
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return AppBinding(
            bundleId: statement.string(0) ?? "", dataClass: AppBinding.DataClass(rawValue: statement.string(1) ?? "") ?? .signed,
            environments: (statement.string(2) ?? "").split(separator: ",").map(String.init))
    }

    /// Binds the database to `bundleId` and the class of `environments` when it
    /// is not bound yet, or checks that it is bound to them (adding a new
    /// environment of the same class to the record).
    ///
    /// Reads first and writes only what is new, so an unchanged binding costs
    /// one read; a database that cannot be written is only checked.
    /// - Throws: ``StoreError`` `DATABASE_MISMATCH`, naming both values, when the
    ///   database belongs to another bundleId or holds the other class of data.
    public func bind(bundleId: String, environments: [AppStoreEnvironment], now: Int64) throws(StoreError) {
        let dataClass = AppBinding.DataClass(environments)
        let names = environments.map(\.rawValue)
        try mapped {
            if mode == .readOnly {
                // A reader only checks, and a database its writer has not migrated yet
                // (no app_binding table) is bound by that writer.
                let table = try connection.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'app_binding'") ?? 0
                if table > 0, let bound = try readBinding() {
                    try Self.check(bound, bundleId: bundleId, dataClass: dataClass, path: path)
                }
                return
            }
            if let bound = try readBinding() {
                try Self.check(bound, bundleId: bundleId, dataClass: dataClass, path: path)
                if names.allSatisfy(bound.environments.contains) { return }
            }
            do {
                try connection.write { () throws -> ((), Connection.Completion) in
                    // Read again inside the write: another process may have bound it meanwhile.
                    if let bound = try readBinding() {
                        try Self.check(bound, bundleId: bundleId, dataClass: dataClass, path: path)
                        let union = bound.environments + names.filter { !bound.environments.contains($0) }
                        let update = try connection.cached("UPDATE app_binding SET environments = ? WHERE id = 1")
                        try update.bind(1, union.joined(separator: ","))
                        try update.step()
                    } else {
                        let insert = try connection.cached(
                            "INSERT INTO app_binding (id, bundle_id, data_class, environments, bound_at) VALUES (1, ?, ?, ?, ?)")
                        try insert.bind(1, bundleId)
                        try insert.bind(2, dataClass.rawValue)
                        try insert.bind(3, names.joined(separator: ","))
                        try insert.bind(4, now)
                        try insert.step()
                    }
                    return ((), .commit)
                }
            } catch let error as SQLiteError where ResultCode.readOnly ~= error.code {
                // A read-only database is only checked: the binding is recorded by the next writer.
                return
            }
        }
    }

    private static func check(_ bound: AppBinding, bundleId: String, dataClass: AppBinding.DataClass, path: String) throws {
        if bound.bundleId != bundleId {
            throw StoreError(
                code: .mismatch,
                message:
                    "the database \(path) belongs to bundleId \(bound.bundleId), but the configuration names bundleId \(bundleId); nothing was read or written (use the database of that app, or another --db)")
        }
        if bound.dataClass != dataClass {
            throw StoreError(
                code: .mismatch,
                message:
                    "the database \(path) holds \(bound.dataClass.described), but the configuration's environment accepts \(dataClass.described); nothing was read or written (unsigned test data is never served from a database of signed data: use another --db)")
        }
    }
}
