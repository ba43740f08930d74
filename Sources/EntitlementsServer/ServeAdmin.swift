import EntitlementCore
import Entitlements
import Foundation
import HTTPServer

/// The operator's endpoints (specification section 13): `POST /grants`,
/// `POST /grants/{id}/revoke`, `POST /credits`, `POST /links`, `GET /users/{appUserId}`,
/// opened by `serve.adminToken` alone; the token's label is recorded as the operator.
extension ServeAPI {
    /// The label of the admin token `header` carries (`Bearer <token>`), or `nil`.
    func adminLabel(_ header: String?) -> String? {
        adminTokens.first { Self.authorized(header, token: $0.token) }?.label
    }

    /// 401 without a valid token, 403 for the query token (or when no admin token is configured).
    func adminPreflight(_ head: RequestHead, route: Route) -> HeadDecision<Route> {
        let header = head.field("authorization")
        if adminLabel(header) != nil { return .proceed(route) }
        if adminTokens.isEmpty {
            return .answer(
                .error(403, code: "FORBIDDEN", message: "the operator's endpoints are closed: set serve.adminToken in the configuration"))
        }
        if let token, Self.authorized(header, token: token) {
            return .answer(.error(403, code: "FORBIDDEN", message: "this endpoint requires serve.adminToken; the query token is not enough"))
        }
        var response = ServerResponse.error(401, code: "UNAUTHORIZED", message: "this endpoint requires Authorization: Bearer <serve.adminToken>")
        response.fields.append(HTTPField(name: "WWW-Authenticate", value: "Bearer"))
        return .answer(response)
    }

    /// Answers an operator's request.
    func admin(_ request: ServerRequest, route: Route) -> ServerResponse {
        let label = adminLabel(request.head.field("authorization"))
        // The POST endpoints take their fields in the body: one sent in the query string
        // (`?at=...`) would be ignored unseen.
        let takesQuery: Bool = if case .appUser = route { true } else { false }
        if !takesQuery, let query = request.head.query, !query.isEmpty {
            return Self.badRequest("this endpoint takes its fields in the JSON body, not in the query string (found \"\(query.prefix(40))\")")
        }
        do {
            switch route {
            case .appUser(let appUserId): return try appUser(appUserId, request)
            case .grants:
                let body = try AdminBody(request)
                try body.checkKnown(["id", "entitlement", "until", "days", "from", "force", "reason", "appUserId"] + AdminBody.selectors)
                let length: GrantRequest.Length
                switch (try body.time("until"), try body.integer("days")) {
                case (let until?, nil): length = .until(until)
                case (nil, let days?): length = .days(days)
                default: throw AdminBody.Refusal("give until (a time) or days (a number), one of them")
                }
                let grant = GrantRequest(
                    id: try body.required("id"), target: try body.target(), entitlement: try body.required("entitlement"),
                    from: try body.time("from"), length: length, force: try body.bool("force"),
                    context: try body.context(label: label))
                return Self.answer(try engine.grant(grant))
            case .revokeGrant(let id):
                let body = try AdminBody(request, optional: true)
                try body.checkKnown(["at", "reason"])
                return Self.answer(try engine.revokeGrant(id: id, at: try body.time("at"), context: try body.context(label: label)))
            case .credits:
                let body = try AdminBody(request)
                try body.checkKnown(["id", "currency", "units", "reason", "appUserId"] + AdminBody.selectors)
                guard let units = try body.integer("units") else { throw AdminBody.Refusal("units is required: a whole number, above 0 to add or below 0 to take") }
                return Self.answer(
                    try engine.credit(
                        id: try body.required("id"), target: try body.target(), currency: try body.required("currency"), units: units,
                        context: try body.context(label: label)))
            case .links:
                let body = try AdminBody(request)
                try body.checkKnown(["id", "appUserId", "reason"] + AdminBody.selectors)
                guard let customer = try body.customer() else {
                    throw AdminBody.Refusal("name the customer: one of \(AdminBody.selectors.joined(separator: ", "))")
                }
                return Self.answer(
                    try engine.link(
                        id: try body.required("id"), appUserId: try body.required("appUserId"), customer: customer,
                        context: try body.context(label: label)))
            default:
                return .error(404, code: "NOT_FOUND", message: "no such endpoint")
            }
        } catch let refusal as AdminBody.Refusal {
            return Self.badRequest(refusal.message)
        } catch let error as EngineError {
            return Self.unavailable(error)
        } catch {
            return Self.badRequest("\(error)")
        }
    }

    /// `GET /users/{appUserId}`, with optional `?at=`: the `query --app-user-id` object.
    private func appUser(_ appUserId: String, _ request: ServerRequest) throws -> ServerResponse {
        guard let parameters = Route.parameters(request.head.query) else { return Self.badRequest("malformed query string") }
        for name in parameters.keys where name != "at" { return Self.badRequest("unknown query parameter \(name.prefix(40)) (expected at)") }
        let at: Int64?
        switch Self.at(parameters) {
        case .failure(let refusal): return refusal.response
        case .success(let value): at = value
        }
        let answer = try engine.query(appUserId: appUserId, at: at)
        switch answer {
        case .appUser: return Self.json(200, answer.json())
        case .notFound: return Self.json(404, answer.json())
        case .refused: return Self.json(400, answer.json())
        }
    }

    /// `200` with `{"result", "id"}`; a refusal with its code: `404` NOT_FOUND, `409` a
    /// conflict or a balance that would go below zero, `400` other bad input.
    static func answer(_ answer: OperatorAnswer) -> ServerResponse {
        switch answer {
        case .recorded: return json(200, answer.json())
        case .refused(let refusal):
            switch refusal.code {
            case "NOT_FOUND": return json(404, answer.json())
            case "GRANT_CONFLICT", "ID_CONFLICT", "LINK_CONFLICT", "INSUFFICIENT_BALANCE": return json(409, answer.json())
            default: return json(400, answer.json())
            }
        }
    }
}

/// The JSON object an operator's request carries.
struct AdminBody {
    struct Refusal: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// The customer selectors a body may carry, as the query API names them.
    static let selectors = ["appTransactionId", "originalTransactionId", "transactionId", "appAccountToken"]

    let object: JSONObject

    /// - Parameter optional: an empty body is an empty object.
    init(_ request: ServerRequest, optional: Bool = false) throws(Refusal) {
        if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard optional else { throw Refusal("the request has no body: expected a JSON object") }
            object = JSONObject()
            return
        }
        let json: JSONValue
        do {
            json = try JSONParser().parse(request.body)
        } catch {
            throw Refusal("the body is not a JSON object: \(String(describing: error).prefix(200))")
        }
        guard case .object(let object) = json else { throw Refusal("the body is not a JSON object") }
        self.object = object
    }

    func checkKnown(_ names: [String]) throws(Refusal) {
        for key in object.keys.sorted() where !names.contains(key) {
            throw Refusal("unknown field \(key.prefix(40)) (expected \(names.joined(separator: ", ")))")
        }
    }

    func string(_ name: String) throws(Refusal) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw Refusal("\(name) expects a string, found \(other.typeName)")
        }
    }

    func required(_ name: String) throws(Refusal) -> String {
        guard let value = try string(name) else { throw Refusal("\(name) is required") }
        return value
    }

    func integer(_ name: String) throws(Refusal) -> Int64? {
        switch object[name] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case let other?: throw Refusal("\(name) expects a whole number, found \(JSONWriter.string(other).prefix(40))")
        }
    }

    func bool(_ name: String) throws(Refusal) -> Bool {
        switch object[name] {
        case nil, .null?: return false
        case .bool(let flag)?: return flag
        case let other?: throw Refusal("\(name) expects true or false, found \(JSONWriter.string(other).prefix(40))")
        }
    }

    /// A moment: milliseconds since 1970, or an ISO 8601 UTC string, read as `--at` is.
    func time(_ name: String) throws(Refusal) -> Int64? {
        let text: String
        switch object[name] {
        case nil, .null?: return nil
        case .int(let value)?: text = String(value)
        case .string(let value)?: text = value
        case let other?: throw Refusal("\(name) expects milliseconds since 1970 or an ISO 8601 UTC time, found \(other.typeName)")
        }
        do { return try TimeArgument.parse(text) } catch { throw Refusal("\(name) " + String(error.message.prefix(300))) }
    }

    /// The one customer selector given, if any.
    func customer() throws(Refusal) -> CustomerQuery? {
        let given = Self.selectors.filter { object[$0] != nil && object[$0] != .null }
        guard given.count <= 1 else { throw Refusal("give one customer selector, not \(given.joined(separator: " and "))") }
        guard let name = given.first, let value = try string(name) else { return nil }
        switch name {
        case "appTransactionId": return .appTransactionId(value)
        case "originalTransactionId": return .originalTransactionId(value)
        case "transactionId": return .transactionId(value)
        default: return .appAccountToken(value)
        }
    }

    /// A customer selector or `appUserId`, exactly one.
    func target() throws(Refusal) -> OperatorTarget {
        switch (try customer(), try string("appUserId")) {
        case (let query?, nil): return .customer(query)
        case (nil, let user?): return .appUser(user)
        case (_?, _?): throw Refusal("give a customer selector or appUserId, not both")
        case (nil, nil): throw Refusal("name whom it is for: appUserId, or one of \(Self.selectors.joined(separator: ", "))")
        }
    }

    /// The token's label as the operator, and the body's `reason`.
    func context(label: String?) throws(Refusal) -> OperatorContext {
        OperatorContext(operatorName: label, reason: try string("reason"))
    }
}
