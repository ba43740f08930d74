import Entitlements
import HTTPServer

/// The endpoints of specification section 9 and the methods each takes.
enum Route: Sendable, Hashable {
    case notifications
    case transactions
    /// `GET /customers?...`
    case customerSearch
    /// `GET /customers/{id}`
    case customer(String)
    /// `GET /customers/{id}/history`
    case history(String)
    case changes
    /// `GET /lifecycle?since=&limit=` (specification section 12)
    case lifecycle
    case health
    /// `POST /grants` (specification section 13)
    case grants
    /// `POST /grants/{id}/revoke`
    case revokeGrant(String)
    /// `POST /credits`
    case credits
    /// `POST /links`
    case links
    /// `GET /users/{appUserId}`
    case appUser(String)
    /// `GET /metrics`: Prometheus's text exposition (specification section 14).
    case metrics
    /// `GET /metrics/summary?from=&to=&interval=`: `metrics` as JSON.
    case metricsSummary
    /// `GET /revenue?from=&to=`: the revenue ledger as JSON.
    case revenue
    /// `GET /webhooks`: where each webhook endpoint stands (`webhooks status`).
    case webhooks
    /// `GET /rejections?limit=`: the latest inputs kept in the quarantine.
    case rejections
    /// `GET /` and `GET /dashboard/{file}`: the dashboard's page and its files (specification section 14).
    case dashboard(String)

    var method: String {
        switch self {
        case .notifications, .transactions, .grants, .revokeGrant, .credits, .links: return "POST"
        case .customerSearch, .customer, .history, .changes, .lifecycle, .health, .appUser, .metrics, .metricsSummary, .revenue, .webhooks,
            .rejections, .dashboard:
            return "GET"
        }
    }

    /// Whether only `serve.adminToken` opens it: the operator's endpoints (specification section 13).
    var needsAdminToken: Bool {
        switch self {
        case .grants, .revokeGrant, .credits, .links, .appUser: return true
        case .notifications, .transactions, .customerSearch, .customer, .history, .changes, .lifecycle, .health, .metrics,
            .metricsSummary, .revenue, .webhooks, .rejections, .dashboard:
            return false
        }
    }

    /// The route as `GET /metrics` labels it (ids left out).
    var label: String {
        switch self {
        case .notifications: return "/notifications"
        case .transactions: return "/transactions"
        case .customerSearch: return "/customers"
        case .customer: return "/customers/{id}"
        case .history: return "/customers/{id}/history"
        case .changes: return "/changes"
        case .lifecycle: return "/lifecycle"
        case .health: return "/health"
        case .grants: return "/grants"
        case .revokeGrant: return "/grants/{id}/revoke"
        case .credits: return "/credits"
        case .links: return "/links"
        case .appUser: return "/users/{id}"
        case .metrics: return "/metrics"
        case .metricsSummary: return "/metrics/summary"
        case .revenue: return "/revenue"
        case .webhooks: return "/webhooks"
        case .rejections: return "/rejections"
        case .dashboard(let name): return name == DashboardAssets.pageName ? "/" : "/dashboard/{file}"
        }
    }

    /// Whether the bearer token guards it: every endpoint but Apple's webhook, the liveness probe
    /// (specification section 9: `GET /health` needs no token and says `{"ok":true}` and nothing more)
    /// and the dashboard's files (they hold no data: the page asks for the token and sends it with each request).
    var needsToken: Bool {
        switch self {
        case .notifications, .health, .dashboard: return false
        default: return true
        }
    }

    /// The route of a path, or `nil` (404). A path segment that does not percent-decode is no route.
    init?(path: Substring) {
        // The most frequent request first: a customer's view.
        if let id = Self.customerId(path) {
            self = .customer(id)
            return
        }
        switch path {
        case "/notifications": self = .notifications
        case "/transactions": self = .transactions
        case "/customers": self = .customerSearch
        case "/changes": self = .changes
        case "/lifecycle": self = .lifecycle
        case "/health": self = .health
        case "/grants": self = .grants
        case "/credits": self = .credits
        case "/links": self = .links
        case "/metrics": self = .metrics
        case "/metrics/summary": self = .metricsSummary
        case "/revenue": self = .revenue
        case "/webhooks": self = .webhooks
        case "/rejections": self = .rejections
        case "/": self = .dashboard(DashboardAssets.pageName)
        default:
            if path.hasPrefix("/dashboard/"), let asset = DashboardAssets.asset(named: path.dropFirst("/dashboard/".count)) {
                self = .dashboard(asset.name)
                return
            }
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            if segments.count == 3, segments[0].isEmpty, segments[1] == "users" {
                guard let id = Self.percentDecoded(segments[2]), !id.isEmpty else { return nil }
                self = .appUser(id)
                return
            }
            if segments.count == 4, segments[0].isEmpty, segments[1] == "grants", segments[3] == "revoke" {
                guard let id = Self.percentDecoded(segments[2]), !id.isEmpty else { return nil }
                self = .revokeGrant(id)
                return
            }
            guard segments.count >= 3, segments.count <= 4, segments[0].isEmpty, segments[1] == "customers",
                let id = Self.percentDecoded(segments[2]), !id.isEmpty
            else { return nil }
            if segments.count == 3 {
                self = .customer(id)
            } else if segments[3] == "history" {
                self = .history(id)
            } else {
                return nil
            }
        }
    }

    /// The id of `/customers/{id}` (one non-empty segment after the prefix, percent-decoded); `nil` for any other path.
    private static func customerId(_ path: Substring) -> String? {
        let prefix = "/customers/".utf8
        guard path.utf8.starts(with: prefix) else { return nil }
        let segment = path.utf8.dropFirst(prefix.count)
        guard !segment.isEmpty, !segment.contains(UInt8(ascii: "/")), let id = percentDecoded(Substring(segment)), !id.isEmpty else { return nil }
        return id
    }

    /// `%XX` decoded as UTF-8; `nil` when malformed.
    static func percentDecoded(_ text: Substring) -> String? {
        // Nothing to decode: the text as it is (already valid UTF-8).
        if !text.utf8.contains(UInt8(ascii: "%")) { return String(text) }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - 0x61 + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - 0x41 + 10
        default: return nil
        }
    }

    /// A query string's parameters, percent-decoded; `nil` when malformed or a name repeats.
    static func parameters(_ query: Substring?) -> [String: String]? {
        guard let query, !query.isEmpty else { return [:] }
        var result: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(parts[0]), !name.isEmpty, result[name] == nil,
                let value = percentDecoded(parts.count > 1 ? parts[1] : "")
            else { return nil }
            result[name] = value
        }
        return result
    }
}
