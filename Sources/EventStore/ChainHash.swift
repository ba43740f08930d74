/// The log's hash chain: each event's `hash` covers the hash before it, its `seq`, its
/// identity and its input, so that changing, removing or reordering any event breaks
/// every hash after it (Migrations/sql/013_chain_digest.sql).
///
/// - Version 1 (events logged before migration 013):
///   `SHA-256(prev_hash || seq || identity || 0x00 || input)`.
/// - Version 2 (from `engine_state.chain_digest_from` on; 1 in a database made since):
///   `SHA-256(prev_hash || seq || identity || 0x01 || SHA-256(input))`.
///
/// `seq` is 8 bytes big-endian, `identity` UTF-8, the input the JWS exactly as received
/// (or a usage record's canonical JSON); the chain starts from 32 zero bytes. Version 2
/// commits to every byte as version 1 does, and lets the append take the input's digest
/// from the verifier, which computed it on its way to the signature's
/// (``EntitlementCore/VerifiedInput/jwsDigest``), instead of hashing 5-20 KB again.
extension EventStore {
    /// The first `seq` hashed by version 2; `Int64.max` in a database whose schema predates
    /// it (opened only to read: a writer migrates on open).
    func chainDigestFrom() throws -> Int64 {
        let has = try connection.cached("SELECT count(*) FROM pragma_table_info('engine_state') WHERE name = 'chain_digest_from'")
        defer { has.reset() }
        guard try has.step(), has.int64(0) == 1 else { return Int64.max }
        has.reset()
        let statement = try connection.cached("SELECT chain_digest_from FROM engine_state WHERE id = 1")
        defer { statement.reset() }
        guard try statement.step() else {
            throw StoreError(code: .corrupt, message: "\(path) has no engine_state row; it was not made by this engine")
        }
        return statement.int64(0)
    }

    /// The hash of the event at `seq`, by the version `digestFrom` gives it.
    ///
    /// - Parameters:
    ///   - digest: the SHA-256 of `raw` when the caller has it (the verifier's); computed
    ///     here when it is `nil` and version 2 needs it.
    ///   - material: a buffer the caller keeps from one event to the next, for its capacity.
    func chainHash(
        prevHash: [UInt8], seq: Int64, identity: String, raw: String, digest: [UInt8]?, digestFrom: Int64, material: inout [UInt8]
    ) -> [UInt8] {
        material.removeAll(keepingCapacity: true)
        material.append(contentsOf: prevHash)
        withUnsafeBytes(of: seq.bigEndian) { material.append(contentsOf: $0) }
        material.append(contentsOf: identity.utf8)
        var raw = raw
        guard seq >= digestFrom else {
            // Version 1: the input itself, hashed where its string holds it.
            material.append(0)
            return material.withUnsafeBufferPointer { head in raw.withUTF8 { hashParts(head, $0) } }
        }
        material.append(1)
        if let digest {
            material.append(contentsOf: digest)
        } else {
            material.append(contentsOf: raw.withUTF8 { hashParts(UnsafeBufferPointer(start: nil, count: 0), $0) })
        }
        return hash(material)
    }
}
