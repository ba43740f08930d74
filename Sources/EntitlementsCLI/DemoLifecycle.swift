import EntitlementCore
import Entitlements

extension Demo {
    /// What happened to the tour's customers, as the lifecycle feed recorded it
    /// (specification section 12): a few events of each, oldest first.
    static func lifecycleShown(_ engine: Engine, customers: [String], perCustomer: Int = 4) {
        guard let records = try? engine.lifecycle(since: 0, limit: 10_000), !records.isEmpty else { return }
        print("What happened, as the lifecycle feed recorded it (`entitlements lifecycle`, \(records.count) events in all):")
        for customer in customers {
            let theirs = records.filter { $0.appTransactionId == customer }.sorted { $0.effectiveAt < $1.effectiveAt }
            guard !theirs.isEmpty else { continue }
            print("  Customer \(customer)")
            for record in theirs.prefix(perCustomer) { print("    \(date(record.effectiveAt))  \(summary(record))") }
            if theirs.count > perCustomer { print("    ... and \(theirs.count - perCustomer) more") }
        }
        print("")
    }

    /// `RENEWAL com.example.pro.monthly (isTrialConversion)`: the type, the product and what the type adds.
    static func summary(_ record: LifecycleRecord) -> String {
        var text = record.type.rawValue
        if case .string(let product)? = record.fields["productId"] { text += " " + product }
        var notes: [String] = []
        for (key, value) in record.fields.members {
            switch (key, value) {
            case ("periodType", .string(let type)) where type != "NORMAL": notes.append(type.lowercased())
            case ("isTrialConversion", .bool(true)): notes.append("trial converted")
            case ("fromProductId", .string(let from)): notes.append("from \(from)")
            case ("reason", .string(let reason)): notes.append(reason.lowercased())
            case ("refundedAmount", .int(let amount)):
                if case .string(let currency)? = record.fields["currency"] { notes.append("\(Double(amount) / 1000) \(currency) refunded") }
            case ("quantity", .int(let quantity)) where quantity > 1: notes.append("x\(quantity)")
            case ("from", .string(let from)): notes.append("from \(from)")
            default: continue
            }
        }
        return notes.isEmpty ? text : text + " (" + notes.joined(separator: ", ") + ")"
    }
}
