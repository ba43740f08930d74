import Entitlements
import HTTPServer

/// The dashboard (specification section 14) and the two endpoints it reads besides
/// the query API: `GET /webhooks` and `GET /rejections`. Both are public JSON
/// endpoints, documented in docs/http-api.md; the page uses no other.
extension ServeAPI {
    /// The Content-Security-Policy of the dashboard's files: scripts, styles and requests
    /// to this server only, no inline code, no frames, no forms, no other origin.
    static let dashboardPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// `GET /` and `GET /dashboard/{file}`: a file of the page, embedded in the binary.
    func dashboard(_ name: String) -> ServerResponse {
        guard let asset = DashboardAssets.asset(named: name[...]) else {
            return .error(404, code: "NOT_FOUND", message: "no dashboard file \(name.prefix(80))")
        }
        return ServerResponse(
            status: 200,
            fields: [
                HTTPField(name: "Content-Type", value: asset.contentType),
                HTTPField(name: "Content-Security-Policy", value: Self.dashboardPolicy),
                HTTPField(name: "X-Content-Type-Options", value: "nosniff"),
                HTTPField(name: "X-Frame-Options", value: "DENY"),
                HTTPField(name: "Referrer-Policy", value: "no-referrer"),
                HTTPField(name: "Cache-Control", value: "no-cache"),
            ],
            body: Array(asset.text.utf8))
    }

    /// `GET /webhooks`: `{"endpoints": [...]}`, each configured endpoint in each of its feeds as `webhooks status` prints it.
    func webhooks(_ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        if let name = parameters.keys.first { return Self.badRequest("unknown query parameter \(name.prefix(40)) (GET /webhooks takes none)") }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let statuses = try engine.webhookStatus()
            return Self.json(200, .object(JSONObject([("endpoints", .array(statuses.map { $0.json() }))])))
        } catch {
            return Self.unavailable(error)
        }
    }

    /// The most `GET /rejections` answers without `limit`, and at all.
    static let defaultRejectionLimit = 50
    static let maxRejectionLimit = 1000

    /// `GET /rejections?limit=N`: `{"rejections": [...]}`, the latest quarantined inputs, newest first.
    func rejections(_ request: ServerRequest) -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "limit" { return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected limit)") }
        var limit = Self.defaultRejectionLimit
        if let text = parameters["limit"] {
            guard let value = Int(text), value >= 1, value <= Self.maxRejectionLimit else {
                return Self.badRequest("limit expects an integer from 1 to \(Self.maxRejectionLimit), got \"\(text.prefix(40))\"")
            }
            limit = value
        }
        queryGate.wait()
        defer { queryGate.signal() }
        do {
            let rows = try engine.rejections(limit: limit)
            return Self.json(200, .object(JSONObject([("rejections", .array(rows.map { $0.json() }))])))
        } catch {
            return Self.unavailable(error)
        }
    }
}
