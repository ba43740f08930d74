import EntitlementCore

extension EventStore {
    /// The CONSUMPTION_REQUEST notifications about `transactionId`, oldest first.
    public func consumptionRequests(transactionId: String) throws(StoreError) -> [StoredConsumptionRequest] {
        try mapped {
            try readRequests(
                "SELECT event_id, transaction_id, customer_key, json_extract(body, '$.data.consumptionRequestReason'), signed_date FROM events WHERE transaction_id = ? AND notification_type = 'CONSUMPTION_REQUEST' ORDER BY signed_date, event_id",
                bind: { try $0.bind(1, transactionId) })
        }
    }

    /// The CONSUMPTION_REQUEST notifications whose answer window is open at `now`
    /// (signed less than 12 hours before) and that no accepted answer sent after them
    /// covers, oldest first.
    public func pendingConsumptionRequests(now: Int64) throws(StoreError) -> [StoredConsumptionRequest] {
        try mapped {
            try readRequests(
                """
                SELECT e.event_id, e.transaction_id, e.customer_key, json_extract(e.body, '$.data.consumptionRequestReason'), e.signed_date
                FROM events e
                WHERE e.notification_type = 'CONSUMPTION_REQUEST' AND e.signed_date > ? AND e.transaction_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM consumption_answers a WHERE a.transaction_id = e.transaction_id
                                  AND a.sent_at >= e.signed_date AND a.status BETWEEN 200 AND 299)
                ORDER BY e.signed_date, e.transaction_id
                """,
                bind: { try $0.bind(1, now - StoredConsumptionRequest.answerWindow) })
        }
    }

    private func readRequests(_ sql: String, bind: (Statement) throws -> Void) throws -> [StoredConsumptionRequest] {
        try requireLogInParts()
        let statement = try connection.cached(sql)
        defer { statement.reset() }
        try bind(statement)
        var requests: [StoredConsumptionRequest] = []
        while try statement.step() {
            requests.append(
                StoredConsumptionRequest(
                    notificationUUID: statement.string(0) ?? "", transactionId: statement.string(1) ?? "",
                    customerKey: statement.string(2), reason: statement.string(3), requestedAt: statement.int64(4)))
        }
        return requests
    }

    /// Records a Send Consumption Information request made and Apple's answer.
    public func recordConsumptionAnswer(_ answer: StoredConsumptionAnswer) throws(StoreError) {
        try mapped {
            try connection.write {
                let insert = try connection.cached(
                    "INSERT INTO consumption_answers (transaction_id, sent_at, body, status, error_code, error_message) VALUES (?, ?, ?, ?, ?, ?)")
                try insert.bind(1, answer.transactionId)
                try insert.bind(2, answer.sentAt)
                try insert.bind(3, answer.body)
                try insert.bind(4, answer.status)
                try insert.bind(5, answer.errorCode)
                try insert.bind(6, answer.errorMessage)
                try insert.step()
                return ((), .commit)
            }
        }
    }

    /// The Send Consumption Information requests made for `transactionId`, oldest first.
    public func consumptionAnswers(transactionId: String) throws(StoreError) -> [StoredConsumptionAnswer] {
        try mapped {
            let statement = try connection.cached(
                "SELECT transaction_id, sent_at, body, status, error_code, error_message FROM consumption_answers WHERE transaction_id = ? ORDER BY sent_at, id")
            defer { statement.reset() }
            try statement.bind(1, transactionId)
            var answers: [StoredConsumptionAnswer] = []
            while try statement.step() {
                answers.append(
                    StoredConsumptionAnswer(
                        transactionId: statement.string(0) ?? "", sentAt: statement.int64(1), body: statement.string(2) ?? "",
                        status: statement.optionalInt64(3), errorCode: statement.string(4), errorMessage: statement.string(5)))
            }
            return answers
        }
    }
}
