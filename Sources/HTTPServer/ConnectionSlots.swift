#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who holds the server's connections, and what a new one may have: the bounds of
/// ``ServerLimits`` as pure decisions (no sockets, no clock), so that every case can be
/// tested alone. The server keeps one behind its lock.
///
/// A new connection is decided on accept, before any byte of it is read: admitted, admitted
/// in place of an idle connection it sheds, or refused (answered `503` at once).
struct ConnectionSlots {
    struct Slot {
        var peer: String
        var fd: Int32
        /// When it became idle (no byte of a request received), in microseconds; `nil` while a request is under way.
        var idleSince: UInt64?
    }

    enum Admission: Equatable {
        /// Serve it; `shed`, when set, is the descriptor of the idle connection it displaced
        /// (its slot already removed: shut it down, its thread closes it).
        case admit(id: Int, shed: Int32?)
        /// Answer `503` at once.
        case refuse
    }

    let maxConnections: Int
    let maxPerClient: Int
    private(set) var slots: [Int: Slot] = [:]
    private var nextID = 1

    init(limits: ServerLimits) {
        maxConnections = max(1, limits.maxConnections)
        maxPerClient = max(1, limits.maxConnectionsPerClient)
    }

    var count: Int { slots.count }
    func count(peer: String) -> Int { slots.values.lazy.filter { $0.peer == peer }.count }
    var idleCount: Int { slots.values.lazy.filter { $0.idleSince != nil }.count }
    func slot(_ id: Int) -> Slot? { slots[id] }

    /// A new connection from `peer`: within both bounds it is admitted; at a bound it takes the
    /// place of the oldest idle connection that bound counts (at the per-client bound only that
    /// client's own), else it is refused. `stillIdle` confirms a candidate for shedding (the
    /// server checks that no byte is waiting on its socket); every connection starts idle.
    mutating func admit(peer: String, fd: Int32, now: UInt64, stillIdle: (Slot) -> Bool = { _ in true }) -> Admission {
        if count(peer: peer) >= maxPerClient {
            guard let victim = oldestIdle(stillIdle, where: { $0.peer == peer }) else { return .refuse }
            return replace(victim, peer: peer, fd: fd, now: now)
        }
        if count < maxConnections { return .admit(id: add(peer: peer, fd: fd, now: now), shed: nil) }
        guard let victim = oldestIdle(stillIdle, where: { _ in true }) else { return .refuse }
        return replace(victim, peer: peer, fd: fd, now: now)
    }

    /// The oldest idle connection (to free a descriptor), removed.
    mutating func shedOldestIdle(stillIdle: (Slot) -> Bool = { _ in true }) -> Slot? {
        guard let victim = oldestIdle(stillIdle, where: { _ in true }) else { return nil }
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

    private mutating func add(peer: String, fd: Int32, now: UInt64) -> Int {
        let id = nextID
        nextID += 1
        slots[id] = Slot(peer: peer, fd: fd, idleSince: now)
        return id
    }

    private mutating func replace(_ victim: Int, peer: String, fd: Int32, now: UInt64) -> Admission {
        let removed = slots.removeValue(forKey: victim)!
        return .admit(id: add(peer: peer, fd: fd, now: now), shed: removed.fd)
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
