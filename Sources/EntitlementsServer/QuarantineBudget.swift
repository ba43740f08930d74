import Entitlements
import Foundation
import HTTPServer

/// How much of the inputs that fail verification over HTTP the quarantine
/// keeps, so that junk posted to the public webhook cannot fill the disk.
///
/// Within each window (a day by default), per client address at most
/// `perClientInputs` inputs and `perClientBytes` bytes are kept, and at most
/// `totalInputs` and `totalBytes` from all clients together. Past a bound an
/// input is still answered (`rejected`, with its error), but instead of its
/// bytes the quarantine gets a counted summary row per address, at most one
/// per `summaryIntervalMilliseconds` ("412 more rejected inputs from
/// 203.0.113.7 not kept"), so nothing disappears without a trace. At most
/// `maxSummaryRows` addresses are named per summary; the rest are counted
/// together in one row.
///
/// Data Apple signed that was rejected only for its app or environment
/// (``Rejection/isSignedByApple``: a notification of another environment, say)
/// is not junk, and nobody else can make it: it is counted apart, outside the
/// per-address bound and the junk's total, up to `signedInputs` distinct
/// inputs and `signedBytes` bytes per window (the same input again is kept
/// free: the quarantine holds it once). So junk from any number of addresses,
/// or through a proxy that puts every client under one address, never stops
/// Apple's own data from being kept.
public struct QuarantineBound: Sendable, Hashable {
    public var perClientInputs: Int
    public var perClientBytes: Int
    public var totalInputs: Int
    public var totalBytes: Int
    public var windowMilliseconds: Int64
    public var summaryIntervalMilliseconds: Int64
    public var maxSummaryRows: Int
    /// Client addresses tracked per window; more are counted as one.
    public var maxTrackedClients: Int
    /// Distinct inputs signed by Apple kept per window, from all clients together.
    public var signedInputs: Int
    /// Bytes of distinct inputs signed by Apple kept per window.
    public var signedBytes: Int

    public init(
        perClientInputs: Int = 100, perClientBytes: Int = 1 << 20, totalInputs: Int = 10_000, totalBytes: Int = 64 << 20,
        windowMilliseconds: Int64 = 86_400_000, summaryIntervalMilliseconds: Int64 = 600_000, maxSummaryRows: Int = 100,
        maxTrackedClients: Int = 10_000, signedInputs: Int = 10_000, signedBytes: Int = 64 << 20
    ) {
        self.perClientInputs = perClientInputs
        self.perClientBytes = perClientBytes
        self.totalInputs = totalInputs
        self.totalBytes = totalBytes
        self.signedInputs = signedInputs
        self.signedBytes = signedBytes
        self.windowMilliseconds = windowMilliseconds
        self.summaryIntervalMilliseconds = summaryIntervalMilliseconds
        self.maxSummaryRows = maxSummaryRows
        self.maxTrackedClients = maxTrackedClients
    }
}

/// The running count against a ``QuarantineBound``. Thread-safe.
final class QuarantineBudget: @unchecked Sendable {
    let bound: QuarantineBound
    private let lock = NSLock()
    private var windowStart: Int64 = 0
    private var kept: [String: (inputs: Int, bytes: Int)] = [:]
    private var totalInputs = 0
    private var totalBytes = 0
    /// Inputs signed by Apple kept in this window, by their hash value, and their bytes.
    private var signedKept: Set<Int> = []
    private var signedBytes = 0
    /// Inputs not kept since the last summary, per client.
    private var notKept: [String: Int] = [:]
    private var notKeptSince: Int64 = 0
    private var lastSummary: Int64 = 0
    /// Numbers each summary row, with the time this budget began, so no two rows are the same input.
    private var summarySerial = 0
    private let began = Engine.now()

    static let otherClients = "other addresses"

    init(bound: QuarantineBound) { self.bound = bound }

    /// Whether to keep `rejection`, received from `client` (counted when kept).
    func admit(_ rejection: Rejection, client: String, now: Int64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if now - windowStart >= bound.windowMilliseconds {
            windowStart = now
            kept = [:]
            totalInputs = 0
            totalBytes = 0
            signedKept = []
            signedBytes = 0
        }
        let bytes = rejection.raw.count
        if rejection.isSignedByApple {
            let hash = rejection.raw.hashValue
            if signedKept.contains(hash) { return true }
            if signedKept.count + 1 <= bound.signedInputs && signedBytes + bytes <= bound.signedBytes {
                signedKept.insert(hash)
                signedBytes += bytes
                return true
            }
            notKeptOne(from: client, now: now)
            return false
        }
        var key = client
        if kept[key] == nil && kept.count >= bound.maxTrackedClients { key = Self.otherClients }
        let used = kept[key] ?? (0, 0)
        if used.inputs + 1 <= bound.perClientInputs && used.bytes + bytes <= bound.perClientBytes
            && totalInputs + 1 <= bound.totalInputs && totalBytes + bytes <= bound.totalBytes
        {
            kept[key] = (used.inputs + 1, used.bytes + bytes)
            totalInputs += 1
            totalBytes += bytes
            return true
        }
        notKeptOne(from: client, now: now)
        return false
    }

    /// Counts an input not kept for the next summary (under the lock).
    private func notKeptOne(from client: String, now: Int64) {
        if notKept.isEmpty { notKeptSince = now }
        if notKept[client] == nil && notKept.count >= bound.maxSummaryRows {
            notKept[Self.otherClients, default: 0] += 1
        } else {
            notKept[client, default: 0] += 1
        }
    }

    /// The summary rows due now (all that are pending when `force`), and resets their counts.
    func takeSummaries(now: Int64, force: Bool = false) -> [Rejection] {
        lock.lock()
        defer { lock.unlock() }
        guard !notKept.isEmpty, force || now - lastSummary >= bound.summaryIntervalMilliseconds else { return [] }
        lastSummary = now
        let since = notKeptSince
        let rows = notKept.sorted { $0.key < $1.key }.map { client, count in
            let message = "\(count) more rejected input\(count == 1 ? "" : "s") from \(client) not kept"
            // Distinct rows: the quarantine keeps one row per distinct input.
            summarySerial += 1
            let raw = Array("\(message) (received from \(since) to \(now); summary \(summarySerial) of the server started at \(began))".utf8)
            return Rejection(code: "NOT_KEPT", message: message, raw: raw, size: 0)
        }
        notKept = [:]
        return rows
    }

    /// How long until the pending summaries are due, or `nil` when none is pending.
    func millisecondsUntilSummary(now: Int64) -> Int64? {
        lock.lock()
        defer { lock.unlock() }
        guard !notKept.isEmpty else { return nil }
        return max(0, lastSummary + bound.summaryIntervalMilliseconds - now)
    }

    /// The address a client's rejected inputs are counted under: the socket
    /// peer; when the peer is this machine (a reverse proxy beside the server)
    /// or one of `serve.trustedProxies`, the address read from `X-Forwarded-For`
    /// through the trusted proxies (``TrustedProxies``). IPv6 addresses count by /64.
    static func clientKey(peer: ClientInfo, forwardedFor: String?, trusted: TrustedProxies) -> String {
        let address = trusted.client(peer: peer.peer, forwardedFor: forwardedFor)
        var v6 = in6_addr()
        if address.contains(":"), !address.lowercased().hasPrefix("::ffff:"), inet_pton(AF_INET6, address, &v6) == 1 {
            let groups = withUnsafeBytes(of: &v6) { bytes in
                (0..<4).map { String(UInt16(bytes[$0 * 2]) << 8 | UInt16(bytes[$0 * 2 + 1]), radix: 16) }
            }
            return groups.joined(separator: ":") + "::/64"
        }
        return address
    }
}
