import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

/// Product ids, ids and rejected inputs are chosen by whoever sends data: the dashboard
/// shows them as text, never as markup. Checked in headless Chromium on the DOM the page built.
@Suite(.serialized, .enabled(if: Chromium.executable != nil, "\(Chromium.missingNotice)"))
struct DashboardEscapingTests {
    static let hostile = #"<script>document.title='owned'</script><img src=x onerror="document.title='owned'">"#

    /// What a page that turned the hostile string into markup would hold.
    static func injected(_ dom: String) -> Bool {
        dom.contains("<script>document.title") || dom.contains("<img src=\"x\"") || dom.contains("<img src=x") || dom.contains("owned</title>")
    }

    @Test("a product id, a searched id and a rejected input holding <script> are shown as text")
    func hostileStringsAreText() throws {
        let server = try TestServer()
        let customer = "705000000000000777"
        let now = Engine.now()
        let transaction = TestPayloads.transaction(
            transactionId: "3000000000000777", originalTransactionId: "3000000000000777", appTransactionId: customer,
            productId: Self.hostile, type: "Non-Consumable", purchaseDate: now - 86_400_000, expiresDate: nil, signedDate: now - 86_400_000)
        let ingest = try server.exchange("POST", "/transactions", body: #"{"signedTransactionInfo":""# + ServeSamples.pki.sign(transaction) + #""}"#)
        #expect(ingest.json?.firstElement?["result"] == "appended", "\(ingest.text)")
        let rejected = try server.exchange("POST", "/transactions", body: Self.hostile)
        #expect(rejected.json?.firstElement?["result"] == "rejected")
        let base = "http://127.0.0.1:\(server.port)"

        let page = try Chromium.dumpDOM(base + "/#/customer/\(customer)")
        #expect(page.contains(#"data-state="ready""#), "\(page.suffix(2000))")
        #expect(page.contains("<title>entitlements</title>"))
        #expect(!Self.injected(page), "\(page)")
        // The product id is there, as text: the serializer escapes it.
        #expect(page.contains("&lt;script&gt;document.title='owned'&lt;/script&gt;&lt;img src=x onerror=\"document.title='owned'\"&gt;"), "\(page)")
        #expect(page.contains(#"data-purchase="3000000000000777""#))

        let found = try Chromium.dumpDOM(base + "/#/find/" + Self.hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect(found.contains(#"data-found="none""#), "\(found.suffix(2000))")
        #expect(!Self.injected(found), "\(found)")
        #expect(found.contains("&lt;script&gt;document.title"), "the searched id is shown as text")

        let rejections = try Chromium.dumpDOM(base + "/#/rejections")
        #expect(rejections.contains("data-rejection="), "\(rejections.suffix(2000))")
        #expect(!Self.injected(rejections), "\(rejections)")
        #expect(rejections.contains("&lt;script&gt;document.title"), "the rejected input's first bytes are shown as text")
    }
}
