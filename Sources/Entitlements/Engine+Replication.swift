import Foundation

extension Engine {
    /// Whether acknowledgments wait for the replica (``EngineConfiguration/replication``).
    public var isReplicated: Bool { replication != nil }

    /// Returns once everything this engine has committed is on the replica; at once
    /// without replication. Every write path that acknowledges calls it after its
    /// commit (ingest, serve's batches, usage).
    /// - Throws: ``EngineError`` `REPLICATION_TIMEOUT`: the commit stays in the local
    ///   database, but must not be acknowledged.
    public func confirmReplicated() throws(EngineError) {
        try replication?.confirm()
    }

    /// Everything committed before the ticket was taken, to be confirmed later by
    /// ``confirmReplicated(_:)``: see ``appendAwaitingConfirmation(verified:receivedAt:)``.
    public struct ReplicationTicket: Sendable, Hashable {
        let number: UInt64
    }

    /// Returns once everything committed before `ticket` was taken is on the replica; at
    /// once without replication. Threads waiting meanwhile share one request to Litestream.
    /// - Throws: ``EngineError`` `REPLICATION_TIMEOUT`: committed locally, but not to be acknowledged.
    public func confirmReplicated(_ ticket: ReplicationTicket) throws(EngineError) {
        try replication?.confirm(ticket: ticket.number)
    }

    /// A ticket for everything this engine has committed so far (number 0 without replication).
    func replicationTicket() -> ReplicationTicket {
        ReplicationTicket(number: replication?.ticket() ?? 0)
    }

    /// Requests sent to Litestream's control socket so far (0 without replication).
    public var replicationRequests: Int { replication?.requestCount ?? 0 }

    /// The lines of a batch committed but not confirmed by the replica: one `error` line
    /// `REPLICATION_TIMEOUT` per item (and per document without items), with its input number.
    static func unacknowledged(_ documents: [InputBytes], counts: [Int], error: EngineError) -> [IngestResult] {
        var results: [IngestResult] = []
        for (index, count) in counts.enumerated() {
            let input = index < documents.count ? documents[index].number ?? index + 1 : index + 1
            for _ in 0..<max(1, count) {
                results.append(IngestResult(outcome: .error, errorCode: error.code.rawValue, errorMessage: error.message, input: input))
            }
        }
        return results
    }
}

extension EngineError.Code {
    /// The batch is committed locally, but the replica did not confirm it in time: not acknowledged (exit 3, `503`).
    public static let replicationTimeout: EngineError.Code = "REPLICATION_TIMEOUT"
}
