import EntitlementCore
import Entitlements

extension Demo {
    /// The demo's refund request answered (specification section 11): the coins customer
    /// asked Apple for a refund of its second pack; the app had spent 250 coins the day
    /// before (recorded with `usage`), so the engine answers that half of that pack
    /// was consumed (first in, first out: 200 from the first pack, 50 from the second).
    static func refundRequestAnswered(_ engine: Engine) {
        let customer = "704100000000000005"
        let pack = "2000000500000002"
        guard let asked = try? engine.consumptionInfo(for: pack), let request = asked.request else { return }
        print("A refund request answered (Send Consumption Information V2)")
        print("  \(date(request.requestedAt))  Apple asks how much of \(pack) was consumed (CONSUMPTION_REQUEST, reason \(request.reason ?? "none given"))")
        let spent = UsageRequest(
            id: "demo-order-1", customer: .appTransactionId(customer), amount: .spend(currency: "coins", units: 250),
            at: request.requestedAt - 86_400_000)
        guard case .recorded(let receipt)? = try? engine.usage(spent) else {
            print("  (the usage record was refused)")
            return
        }
        print("  \(date(receipt.usage.at))  the app had spent 250 coins: `entitlements usage --currency coins --units 250` -> balance \(receipt.balance ?? 0)")
        // Answered within the 12 hours Apple allows.
        guard let info = try? engine.consumptionInfo(for: pack, now: request.requestedAt + 3_600_000) else { return }
        let body = info.body(ConsumptionOptions(customerConsented: true, refundPreference: "GRANT_PRORATED"))
        print("  \(date(request.requestedAt + 3_600_000))  the engine answers, before the deadline \(date(info.deadline ?? 0)):")
        print("      PUT /inApps/v2/transactions/consumption/\(pack)  \(JSONWriter.string(body))")
        print("      (\(info.share.unitsSpent ?? 0) of its \(info.share.units ?? 0) coins spent, first in, first out; `entitlements consumption --transaction-id \(pack) --send`)")
        print("")
    }
}
