import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

/// The search box: an id nobody has is answered with why each way of reading it failed.
@Suite(.serialized, .enabled(if: Chromium.executable != nil, "\(Chromium.missingNotice)"))
struct DashboardFindTests {
    @Test("an order id searched on a server without appStoreServerAPI says the server's reason")
    func orderIdWithoutTheAPI() throws {
        let server = try TestServer()
        #expect(server.engine.configuration.appStoreServerAPI == nil)
        let answer = try server.exchange("GET", "/customers?orderId=MQ5Z3X8K2L")
        #expect(answer.status == 404, "\(answer.text)")
        guard case .string(let reason)? = answer.json?["error"]?["message"] else {
            Issue.record("no message: \(answer.text)")
            return
        }
        #expect(reason.contains("appStoreServerAPI"), "\(reason)")

        let page = try ChromiumSession()
        try page.navigate("http://127.0.0.1:\(server.port)/#/")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready'"))
        try page.evaluate("document.getElementById('find-id').focus()")
        try page.type("MQ5Z3X8K2L")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-found=none]')"))
        let said = try page.evaluate("document.querySelector('[data-found=none]').textContent")
        guard case .string(let text) = said else {
            Issue.record("nothing said: \(said)")
            return
        }
        #expect(text.contains("order id (NOT_FOUND: " + reason + ")"), "\(text)")
        // The ordinary not-found answers add nothing to "tried it as".
        #expect(text.contains("Tried it as: appTransactionId, originalTransactionId, transactionId,"), "\(text)")
    }
}
