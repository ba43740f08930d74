#if canImport(Glibc)
import Glibc
#endif

/// Who holds the server's connections, and what a new one may have: the bounds of
/// ``ServerLimits`` as pure decisions (no sockets, no clock), so that every case can be
/// tested alone. The server keeps one behind its lock.
struct ConnectionSlots {
    enum Tier: Hashable, Sendable {
        /// Counted against `maxConnections`.
        case general
        /// Over a bound: reading its head, to be placed by ``place(_:pool:)``.
        case pending
        /// In a reserved pool: serves one request, then closes.
        case reserved(String)
    }

    struct Slot {
        var peer: String
        var tier: Tier
        var fd: Int32
        /// When it became idle (no byte of a request received), in microseconds; `nil` while a request is under way.
        var idleSince: UInt64?
    }

    enum Admission: Equatable {
        /// Serve it in `tier`; `shed`, when set, is the descriptor of the idle connection it displaced
        /// (its slot already removed: shut it down, its thread closes it).
        case admit(id: Int, tier: Tier, shed: Int32?)
        /// Answer `503` at once.
        case refuse
    }

    enum Placement: Equatable {
        case general
        case reserved(String)
        case refused
    }

    let maxConnections: Int
    let maxPerClient: Int
    let reserved: [String: Int]
    private(set) var slots: [Int: Slot] = [:]
    private var nextID = 1

    init(limits: ServerLimits) {
        maxConnections = max(1, limits.maxConnections)
        maxPerClient = max(1, limits.maxConnectionsPerClient)
        reserved = limits.reservedConnections.filter { $0.value > 0 }
    }

    var count: Int { slots.count }
    var reserveTotal: Int { reserved.values.reduce(0, +) }
    func count(_ tier: Tier) -> Int { slots.values.lazy.filter { $0.tier == tier }.count }
    func count(peer: String) -> Int { slots.values.lazy.filter { $0.peer == peer }.count }
    func slot(_ id: Int) -> Slot? { slots[id] }

    /// A new connection from `peer`. `stillIdle` confirms a candidate for shedding (the server
    /// checks that no byte is waiting on its socket); every connection starts idle.
    mutating func admit(peer: String, fd: Int32, now: UInt64, stillIdle: (Slot) -> Bool = { _ in true }) -> Admission {
        if count(peer: peer) >= maxPerClient {
            if let victim = oldestIdle(stillIdle, where: { $0.peer == peer && $0.tier == .general }) {
                return replace(victim, peer: peer, fd: fd, now: now)
            }
            return pending(peer: peer, fd: fd, now: now, stillIdle: stillIdle)
        }
        if count(.general) < maxConnections { return .admit(id: add(peer: peer, tier: .general, fd: fd, now: now), tier: .general, shed: nil) }
        if let victim = oldestIdle(stillIdle, where: { $0.tier == .general }) { return replace(victim, peer: peer, fd: fd, now: now) }
        return pending(peer: peer, fd: fd, now: now, stillIdle: stillIdle)
    }

    /// Over a bound: a pending slot of the reserve, if the reserve has one (shedding an idle pending one if need be).
    private mutating func pending(peer: String, fd: Int32, now: UInt64, stillIdle: (Slot) -> Bool) -> Admission {
        guard reserveTotal > 0 else { return .refuse }
        let share = max(1, reserveTotal / 2)
        let mine = slots.values.lazy.filter { $0.peer == peer && $0.tier == .pending }.count
        if mine >= share {
            guard let victim = oldestIdle(stillIdle, where: { $0.peer == peer && $0.tier == .pending }) else { return .refuse }
            return replace(victim, peer: peer, fd: fd, now: now)
        }
        if count - count(.general) < reserveTotal {
            return .admit(id: add(peer: peer, tier: .pending, fd: fd, now: now), tier: .pending, shed: nil)
        }
        guard let victim = oldestIdle(stillIdle, where: { $0.tier == .pending }) else { return .refuse }
        return replace(victim, peer: peer, fd: fd, now: now)
    }

    /// A pending connection whose head names `pool` (or none): the general pool if it has room
    /// now, else the pool's reserve if it has room (and its address holds less than half of it),
    /// else refused (answer `503`).
    mutating func place(_ id: Int, pool: String?) -> Placement {
        guard let slot = slots[id] else { return .refused }
        guard slot.tier == .pending else { return slot.tier == .general ? .general : .refused }
        if count(.general) < maxConnections && count(peer: slot.peer) <= maxPerClient {
            slots[id]?.tier = .general
            return .general
        }
        // One address holds at most half a pool (at least one slot): the rest stays for others.
        if let pool, let size = reserved[pool], count(.reserved(pool)) < size,
            slots.values.lazy.filter({ $0.peer == slot.peer && $0.tier == .reserved(pool) }).count < max(1, size / 2)
        {
            slots[id]?.tier = .reserved(pool)
            return .reserved(pool)
        }
        return .refused
    }

    /// The oldest idle connection other than reserved ones (to free a descriptor), removed.
    mutating func shedOldestIdle(stillIdle: (Slot) -> Bool = { _ in true }) -> Slot? {
        guard let victim = oldestIdle(stillIdle, where: { if case .reserved = $0.tier { return false } else { return true } }) else { return nil }
        return slots.removeValue(forKey: victim)
    }

    mutating func markIdle(_ id: Int, now: UInt64) {
        if slots[id] != nil { slots[id]!.idleSince = now }
    }

    mutating func markBusy(_ id: Int) {
        if slots[id] != nil { slots[id]!.idleSince = nil }
    }

    /// Removes a closed connection; `false` when it had been shed already.
    @discardableResult
    mutating func release(_ id: Int) -> Bool { slots.removeValue(forKey: id) != nil }

    private mutating func add(peer: String, tier: Tier, fd: Int32, now: UInt64) -> Int {
        let id = nextID
        nextID += 1
        slots[id] = Slot(peer: peer, tier: tier, fd: fd, idleSince: now)
        return id
    }

    private mutating func replace(_ victim: Int, peer: String, fd: Int32, now: UInt64) -> Admission {
        let removed = slots.removeValue(forKey: victim)!
        return .admit(id: add(peer: peer, tier: removed.tier, fd: fd, now: now), tier: removed.tier, shed: removed.fd)
    }

    private func oldestIdle(_ stillIdle: (Slot) -> Bool, where matches: (Slot) -> Bool) -> Int? {
        var best: (id: Int, since: UInt64)? = nil
        for (id, slot) in slots {
            guard let since = slot.idleSince, matches(slot) else { continue }
            if let current = best, current.since < since || (current.since == since && current.id < id) { continue }
            guard stillIdle(slot) else { continue }
            best = (id, since)
        }
        return best?.id
    }
}

/// What the accept loop does after `accept()` fails: out of descriptors (or kernel memory) it
/// pauses, 10 ms at first and doubling up to 1 s, until an accept succeeds; instead of
/// spinning on a listening socket that stays readable.
struct AcceptBackoff: Equatable {
    static let firstPauseMilliseconds = 10
    static let longestPauseMilliseconds = 1000

    enum Action: Equatable {
        /// Nothing more is waiting.
        case drained
        /// That connection failed alone (aborted before it was accepted): accept the next.
        case again
        /// The process or system is out of a resource: stop accepting this long (and free what can be freed).
        case pause(milliseconds: Int)
    }

    private(set) var pauseMilliseconds = 0

    mutating func failed(errno code: Int32) -> Action {
        switch code {
        case EAGAIN, EWOULDBLOCK: return .drained
        case EINTR, ECONNABORTED, EPROTO, EPERM: return .again
        default:
            // EMFILE, ENFILE, ENOBUFS, ENOMEM, and anything unforeseen: never retry at once.
            pauseMilliseconds = pauseMilliseconds == 0 ? Self.firstPauseMilliseconds : min(Self.longestPauseMilliseconds, pauseMilliseconds * 2)
            return .pause(milliseconds: pauseMilliseconds)
        }
    }

    /// Whether `code` means the descriptors ran out (shedding an idle connection frees one).
    static func isOutOfDescriptors(_ code: Int32) -> Bool { code == EMFILE || code == ENFILE }

    mutating func accepted() { pauseMilliseconds = 0 }
}
