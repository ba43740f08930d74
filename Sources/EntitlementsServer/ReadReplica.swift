import Entitlements
import HTTPServer

/// `serve --read-only`: a read replica (specification section 15). The engine is opened
/// ``DatabaseMode/readOnly`` on a copy that another process keeps up to date (a
/// Litestream follower, `litestream restore -f`): the GET endpoints answer from it,
/// every write is refused with `503 READ_ONLY_REPLICA`, and every answer says how
/// far the copy has come (`X-Log-Head: <seq>`).
extension ServeAPI {
    /// Whether this server is a read replica: its engine only reads.
    var readOnly: Bool { engine.mode == .readOnly }

    /// The header that carries the seq of the replica's last event.
    static let logHeadField = "X-Log-Head"

    /// The answer to a write on a read replica: 503, so that a client (or Apple) retries,
    /// against the primary it should have been sent to.
    static func readOnlyRefusal(_ route: Route) -> ServerResponse {
        var response = ServerResponse.error(
            503, code: "READ_ONLY_REPLICA",
            message: "this server is a read replica (serve --read-only): it answers queries only; send \(route.method) requests to the primary")
        response.fields.append(HTTPField(name: "Retry-After", value: "60"))
        return response
    }

    /// The log's head, or `nil` when the database cannot be read now.
    func currentHead() -> LogHeadPosition? { try? engine.logHead() }

    /// `response` with `X-Log-Head` when this server is a read replica and the head is known.
    func stamped(_ response: ServerResponse, head: LogHeadPosition?) -> ServerResponse {
        guard readOnly, let head else { return response }
        var response = response
        response.fields.append(HTTPField(name: Self.logHeadField, value: String(head.seq)))
        return response
    }

    /// A decision of the preflight, its answer stamped with the head on a read replica;
    /// a write refused there with ``readOnlyRefusal(_:)``.
    func replicaPreflight(_ head: RequestHead, client: ClientInfo) -> HeadDecision<Route> {
        var decision = preflight(head, client: client)
        if readOnly, case .proceed(let route) = decision, route.method != "GET" {
            decision = .answer(Self.readOnlyRefusal(route))
        }
        guard readOnly, case .answer(let response) = decision else { return decision }
        return .answer(stamped(response, head: currentHead()))
    }

    /// The handler's answer, on a read replica with the head read before it was made
    /// (so the answer reflects at least that event) and `/health` with the head and its age.
    func replicaHandle(_ request: ServerRequest, route: Route, client: ClientInfo) -> ServerResponse {
        guard readOnly else { return handle(request, route: route, client: client) }
        let head = currentHead()
        if route == .health { return stamped(replicaHealth(head), head: head) }
        return stamped(handle(request, route: route, client: client), head: head)
    }

    /// `GET /health` on a read replica: `{"ok":true,"head":SEQ,"ageMs":MS}`, `ageMs` now minus
    /// when the last event was received (`null` for an empty log); 503 when the database cannot be read.
    func replicaHealth(_ known: LogHeadPosition?) -> ServerResponse {
        let head: LogHeadPosition
        do throws(EngineError) {
            if let known { head = known } else { head = try engine.logHead() }
        } catch {
            return Self.unavailable(error)
        }
        let age = head.receivedAt.map { String(max(0, Engine.now() - $0)) } ?? "null"
        return .json(200, Array(#"{"ok":true,"head":\#(head.seq),"ageMs":\#(age)}"#.utf8))
    }
}
