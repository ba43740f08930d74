/// The ids of the JWS headers a connection has read or written (`jws_headers`),
/// both ways: a log holds few distinct headers (one per signing certificate),
/// so after the first event each is found here, not in the database.
///
/// Rows of `jws_headers` are never changed or deleted, so an id once committed
/// names its header for good, whichever process wrote it. Ids inserted by a
/// transaction that rolls back are not: ``forgetUncommitted()`` drops them.
final class JWSHeaders {
    private var ids: [String: Int64] = [:]
    private var texts: [Int64: String] = [:]
    private var uncommitted: [String] = []
    /// The header met last: nearly every JWS has the one before's (one certificate
    /// signs them all for years), and comparing it costs less than hashing it.
    private var last: (header: String, id: Int64)?

    /// The id of `header`, inserted in the caller's transaction when it is new.
    func id(of header: String, on connection: Connection) throws -> Int64 {
        if let last, last.header == header { return last.id }
        let id = try lookUp(header, on: connection)
        last = (header, id)
        return id
    }

    private func lookUp(_ header: String, on connection: Connection) throws -> Int64 {
        if let id = ids[header] { return id }
        let find = try connection.cached("SELECT id FROM jws_headers WHERE header = ?")
        defer { find.reset() }
        try find.bind(1, header)
        let id: Int64
        if try find.step() {
            id = find.int64(0)
        } else {
            let insert = try connection.cached("INSERT INTO jws_headers (header) VALUES (?)")
            try insert.bind(1, header)
            try insert.step()
            id = connection.lastInsertRowid
            uncommitted.append(header)
        }
        ids[header] = id
        texts[id] = header
        return id
    }

    /// The header text of `id`.
    func header(_ id: Int64, on connection: Connection) throws -> String {
        if let text = texts[id] { return text }
        let find = try connection.cached("SELECT header FROM jws_headers WHERE id = ?")
        defer { find.reset() }
        try find.bind(1, id)
        guard try find.step(), let text = find.string(0) else {
            throw StoreError(code: .unreadable, message: "JWS header \(id) is missing from the log (jws_headers)")
        }
        ids[text] = id
        texts[id] = text
        return text
    }

    /// The transaction that inserted headers committed: their ids hold.
    func committed() { uncommitted.removeAll() }

    /// The transaction rolled back: the ids it inserted name nothing.
    func forgetUncommitted() {
        last = nil
        for header in uncommitted {
            if let id = ids.removeValue(forKey: header) { texts[id] = nil }
        }
        uncommitted.removeAll()
    }
}
