/// The first event found that does not match the log's hash chain or its signature.
public struct AuditFinding: Sendable, Hashable {
    public var seq: Int64
    public var identity: String
    public var problem: String

    public init(seq: Int64, identity: String, problem: String) {
        self.seq = seq
        self.identity = identity
        self.problem = problem
    }
}

/// What an audit of the log found.
public struct AuditReport: Sendable {
    public var events: Int64
    /// The first event that does not match, or `nil` when the whole log checks out.
    public var firstMismatch: AuditFinding?
    /// Whether the immutability triggers are in place and do what the schema
    /// says (their SQL is compared, not only their names).
    public var triggersPresent: Bool
    /// What is wrong with the immutability triggers (missing, or changed), when anything is.
    public var triggerProblems: [String] = []
    /// The head recorded beside the database at the last commit (see
    /// the store's head record), when there is one.
    public var recordedHead: LogHead? = nil
    /// The hash of the last event checked (hex). The chain alone cannot reveal
    /// that the newest events were deleted: the engine compares it with the head
    /// record it writes beside the database, and an operator can pin it
    /// (`audit --expect-head SEQ:HASH`).
    public var headHash: String = ""
    /// The sequence number of the last event checked.
    public var headSeq: Int64 = 0
    /// How many events a known head (the head record, or an expected head) names beyond
    /// the log's end, when everything else checks out: committed, then lost (deleted, or
    /// never on the replica the database was restored from). 0 when the log reaches every
    /// known head. ``firstMismatch`` is set as well.
    public var missingEvents: Int64 = 0

    public init(events: Int64, firstMismatch: AuditFinding?, triggersPresent: Bool, triggerProblems: [String] = [], recordedHead: LogHead? = nil, headHash: String = "", headSeq: Int64 = 0) {
        self.events = events
        self.firstMismatch = firstMismatch
        self.triggersPresent = triggersPresent
        self.triggerProblems = triggerProblems
        self.recordedHead = recordedHead
        self.headHash = headHash
        self.headSeq = headSeq
    }
}
