/// The app users a customer's `appAccountToken` made it over time, with
/// `appUsers.fromAppAccountToken` (specification section 13): at every moment, the
/// token of the latest-signed transaction or renewal info that carried one, lowercased.
/// At the standing claim's `signedDate` its token (``CustomerState/accountToken``, decided
/// by raw JWS on a tie); at an earlier moment two objects signed in the same millisecond
/// with different tokens are told apart by the greater token (no raw is read for them).
struct AccountTokenTimeline {
    /// One app user and the moment it took over.
    struct Change: Equatable {
        /// The `signedDate` of the first claim of this app user after another's.
        var at: Int64
        /// The app user: the token, lowercased.
        var user: String
    }

    /// Each moment the app user changed, first to last; the first is the moment the
    /// customer got one.
    let changes: [Change]

    /// The claims of the customer's own data among `events` (any order, duplicates
    /// allowed; events of other customers are left out: the state says which
    /// transactions and subscriptions are its own), and the state's standing claim.
    init(state: CustomerState, events: [Event]) {
        // The winning token at each signedDate.
        var winners: [Int64: String] = [:]
        func claim(_ token: String?, _ signedDate: Int64) {
            guard let token else { return }
            if let standing = winners[signedDate], !standing.utf8Precedes(token) { return }
            winners[signedDate] = token
        }
        func claim(transaction facts: TransactionFacts?) {
            guard let facts, state.transactions[facts.transactionId] != nil else { return }
            claim(facts.appAccountToken, facts.signedDate)
        }
        func claim(renewalInfo facts: RenewalFacts?) {
            guard let facts, state.renewalInfos[facts.originalTransactionId] != nil else { return }
            claim(facts.appAccountToken, facts.signedDate)
        }
        if let standing = state.accountToken { claim(standing.token, standing.signedDate) }
        for event in events {
            switch event.body {
            case .transaction(let t): claim(transaction: t.facts)
            case .renewalInfo(let r): claim(renewalInfo: r.facts)
            case .notification(let n):
                claim(transaction: n.transaction?.facts)
                claim(renewalInfo: n.renewalInfo?.facts)
            case .appTransaction, .receipt, .usage, .operatorAction: break
            }
        }
        if let standing = state.accountToken { winners[standing.signedDate] = standing.token }
        var changes: [Change] = []
        for (at, token) in winners.sorted(by: { $0.key < $1.key }) {
            let user = token.lowercased()
            if changes.last?.user != user { changes.append(Change(at: at, user: user)) }
        }
        self.changes = changes
    }

    /// The app user at `moment`: the last change by then, else (every claim signed
    /// later) the first.
    func user(at moment: Int64) -> String? {
        changes.last(where: { $0.at <= moment })?.user ?? changes.first?.user
    }
}
