import EntitlementCore
internal import EventStore
import Synchronization

/// The rules a database answers under, as last read from it, so that the stored
/// text is read and parsed once per change rather than once per answer.
final class ActiveRulesCache: Sendable {
    private let last = Mutex<(key: ActiveRulesKey, rules: Rules, json: String)?>(nil)

    func rules(for key: ActiveRulesKey) -> (rules: Rules, json: String)? {
        last.withLock { last in last.flatMap { $0.key == key ? ($0.rules, $0.json) : nil } }
    }

    func remember(_ rules: Rules, json: String, key: ActiveRulesKey) {
        last.withLock { $0 = (key, rules, json) }
    }
}

extension Engine {
    /// The rules this database answers under (specification section 13).
    ///
    /// A database keeps its active rules: the rules of the last `replay`, or, on
    /// a fresh database, the configuration's rules, recorded on first use. Every
    /// answer, whichever process asks, applies them; only `replay(diff:now:progress:)`
    /// makes the configuration's rules the database's. ``rulesWarning()`` says when
    /// the two differ.
    /// - Throws: ``EngineError`` when the database cannot be read.
    public func activeRules() throws(EngineError) -> Rules {
        do {
            return try readers.withReader { store throws(StoreError) in try activeRules(store).rules }
        } catch {
            throw EngineError(error)
        }
    }

    /// The database's active rules and their canonical JSON, read on `store`'s connection:
    /// the configuration's rules while the database records none.
    func activeRules(_ store: EventStore) throws(StoreError) -> (rules: Rules, json: String) {
        // Most answers find the rules they had: one small row read, no text.
        let key = try store.activeRulesKey()
        if key.length == 0 { return (configuration.rules, rulesJSON) }
        if let known = activeRulesCache.rules(for: key) { return known }
        let resolved = resolvedRules(stored: try store.engineState().rulesJSON)
        activeRulesCache.remember(resolved.rules, json: resolved.json, key: key)
        return resolved
    }

    /// The rules recorded as `stored` (canonical JSON; empty for none yet).
    func resolvedRules(stored: String) -> (rules: Rules, json: String) {
        if stored.isEmpty || stored == rulesJSON { return (configuration.rules, rulesJSON) }
        // Recorded by this engine's code as canonical JSON; a text that does not read
        // back (never written so) leaves the configuration's rules in charge.
        guard let rules = try? Rules(jsonText: stored) else { return (configuration.rules, rulesJSON) }
        return (rules, stored)
    }

    /// A warning when the configuration's rules differ from the database's active
    /// rules, which every answer applies until `replay` applies the configuration's;
    /// else `nil` (also for a fresh database, which takes the configuration's rules).
    ///
    /// `warning: the configuration's rules "V2" differ from the database's; answering
    /// under the database's rules "V1"; run replay to apply "V2"`.
    public func rulesWarning() -> String? {
        guard let state = try? readers.withReader({ store throws(StoreError) in try store.engineState() }) else { return nil }
        if state.rulesJSON.isEmpty || state.rulesJSON == rulesJSON { return nil }
        let configured = configuration.rules.version
        let active = resolvedRules(stored: state.rulesJSON).rules.version
        let differ =
            configured == active
            ? "the configuration's rules \"\(configured)\" differ in content from the database's rules of the same version"
            : "the configuration's rules \"\(configured)\" differ from the database's"
        return "warning: \(differ); answering under the database's rules \"\(active)\"; run replay to apply \"\(configured)\""
    }
}
