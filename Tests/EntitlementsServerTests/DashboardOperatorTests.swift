import EntitlementCore
import Entitlements
import EntitlementsServer
import Foundation
import Testing
import TestPKI
import TestSupport

/// The dashboard used as a person uses it, in headless Chromium over the DevTools
/// protocol: the token typed once, a grant made and revoked with the keyboard, an app
/// user whose id is markup, and the query token refused where the admin token is needed.
@Suite(.serialized, .enabled(if: Chromium.executable != nil, "\(Chromium.missingNotice)"))
struct DashboardOperatorTests {
    static let hostileUser = #"<img src=x onerror="document.title='owned'"><script>document.title='owned'</script>"#

    /// A server with a query token and an admin token, holding customer 1 (one notification).
    static func serverWithACustomer() throws -> (TestServer, String) {
        let server = try TestServer(token: "query-token", adminTokens: [AdminToken(token: "admin-token", label: "support")])
        #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(1)).json?["result"] == "appended")
        return (server, ServeSamples.customer(1))
    }

    /// Chromium on `customer`'s page, the admin token typed where the page asked for it
    /// (the server wants a token: the page asks, with the focus in the field).
    static func customerPageWithTheAdminToken(server: TestServer, customer: String) throws -> ChromiumSession {
        let page = try ChromiumSession()
        try page.navigate("http://127.0.0.1:\(server.port)/#/customer/\(customer)")
        #expect(try page.wait(until: "!document.getElementById('token-panel').hidden && document.activeElement.id === 'token-input'"))
        try page.type("admin-token")
        try page.press("Enter")
        return page
    }

    @Test("the token asked once, a grant and its revocation by keyboard, an app user id holding <script> shown as text")
    func grantRevokeAndAppUser() throws {
        let (server, customer) = try Self.serverWithACustomer()
        let linkBody = JSONWriter.string(["id": "link-1", "appUserId": .string(Self.hostileUser), "appTransactionId": .string(customer)])
        let link = try server.exchange("POST", "/links", body: linkBody, headers: ["Authorization: Bearer admin-token"])
        #expect(link.status == 200, "\(link.text)")
        let base = "http://127.0.0.1:\(server.port)"
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')"))
        #expect(try page.evaluate("document.querySelector('#view h2').textContent") == .string("Customer \(customer)"))
        #expect(try page.evaluate("sessionStorage.getItem('entitlements.token')") == "admin-token")

        // Grant: the form filled and sent by keyboard.
        try page.evaluate("document.querySelector('form.grant input[name=entitlement]').focus()")
        try page.evaluate("document.querySelector('form.grant input[name=entitlement]').select()")
        try page.type("pro")
        try page.press("Tab")
        #expect(try page.evaluate("document.activeElement.name") == "days")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant-state=active]')"))
        let grantId = try page.evaluate("document.querySelector('[data-grant-state=active]').getAttribute('data-grant')")
        guard case .string(let id) = grantId else {
            Issue.record("no grant shown: \(grantId)")
            return
        }
        #expect(id.hasPrefix("dashboard-"))
        guard case .customer(let granted) = try server.engine.query(.appTransactionId(customer)) else {
            Issue.record("no customer")
            return
        }
        #expect(granted.entitlements.contains { $0.name == "pro" && $0.active })
        let started = try server.engine.lifecycle(since: 0, limit: 1000).map { $0.json() }
        #expect(started.contains { $0["type"] == "GRANT_STARTED" && $0["grantId"] == .string(id) }, "\(started)")

        // Revoke: the button reached and pressed by keyboard.
        try page.evaluate("document.querySelector('button[data-revoke]').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant-state=revoked]')"))
        let revoked = try server.engine.lifecycle(since: 0, limit: 1000).map { $0.json() }
        #expect(revoked.contains { $0["type"] == "GRANT_REVOKED" && $0["grantId"] == .string(id) }, "\(revoked)")

        // The app user, whose id is markup: shown as text, nothing injected.
        let encoded = Self.hostileUser.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        try page.navigate(base + "/#/user/\(encoded)")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appUserId]')"))
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId]').textContent") == .string(Self.hostileUser))
        #expect(try page.evaluate("document.querySelectorAll('#view img, #view script').length") == 0)
        #expect(try page.evaluate("document.title") == "entitlements")
        #expect(try page.evaluate("Array.from(document.querySelectorAll('#view a')).some(a => a.textContent === '\(customer)')") == true)
        // Found by the app user id from the search box, by keyboard.
        try page.navigate(base + "/#/")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready'"))
        try page.evaluate("document.getElementById('find-id').focus()")
        try page.type(Self.hostileUser)
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && location.hash.startsWith('#/user/')"))
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId]').textContent") == .string(Self.hostileUser))
        #expect(try page.evaluate("document.title") == "entitlements")

        // With the query token the page reads everything but may not grant: it says so.
        try page.evaluate("document.getElementById('forget-token').click()")
        #expect(try page.wait(until: "!document.getElementById('token-panel').hidden"))
        try page.evaluate("document.getElementById('token-input').focus()")
        try page.type("query-token")
        try page.press("Enter")
        try page.navigate(base + "/#/customer/\(customer)")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('form.grant')"))
        try page.evaluate("document.querySelector('form.grant input[name=days]').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "/admin token/.test(document.querySelector('form.grant').nextElementSibling.textContent)"))
    }

    /// A server as ``serverWithACustomer()`` makes it, its configuration's `appUsers` section `appUsers`.
    static func serverWithACustomer(appUsers: JSONValue) throws -> (TestServer, String) {
        let workspace = try Workspace(name: "serve")
        guard case .object(var config) = Scenario.configJSON() else { preconditionFailure("the configuration is an object") }
        config["appUsers"] = appUsers
        try Data(JSONWriter.string(.object(config)).utf8).write(to: workspace.configURL)
        let server = try TestServer(
            token: "query-token", adminTokens: [AdminToken(token: "admin-token", label: "support")], workspace: workspace)
        #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(1)).json?["result"] == "appended")
        return (server, ServeSamples.customer(1))
    }

    @Test("the customer page names the app user its appAccountToken makes it, a link to the app user's page; with the query token it names none")
    func appUserOfTheAccountToken() throws {
        let (server, customer) = try Self.serverWithACustomer(appUsers: ["fromAppAccountToken": true])
        let user = ServeSamples.accountToken(1)
        #expect(try server.exchange("GET", "/users/\(user)", headers: ["Authorization: Bearer admin-token"]).status == 200)
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')"))
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId]')?.textContent") == .string(user))
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId]').previousElementSibling.textContent") == "app user")
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId] a').getAttribute('href')") == .string("#/user/\(user)"))
        // The link followed by keyboard: the app user's page, which lists the customer.
        try page.evaluate("document.querySelector('[data-field=appUserId] a').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && location.hash === '#/user/\(user)' && document.querySelector('#view h2 [data-field=appUserId]')"))
        #expect(try page.evaluate("Array.from(document.querySelectorAll('#view a')).some(a => a.textContent === '\(customer)')") == true)

        // The query token reads no app user: the page says none, and asks for no other token.
        try page.evaluate("sessionStorage.setItem('entitlements.token', 'query-token')")
        try page.evaluate("location.hash = '#/customer/\(customer)'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')"))
        #expect(try page.evaluate("document.querySelectorAll('[data-field=appUserId]').length") == 0)
        #expect(try page.evaluate("document.getElementById('token-panel').hidden") == true)
    }

    @Test("a customer moved to another app user names the one it moved to, as text; a customer of no app user names none")
    func appUserOfATransfer() throws {
        let (server, customer) = try Self.serverWithACustomer()
        #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(2)).json?["result"] == "appended")
        for (id, user) in [("link-1", "acct-1"), ("link-2", Self.hostileUser)] {
            let body = JSONWriter.string(["id": .string(id), "appUserId": .string(user), "appTransactionId": .string(customer)])
            let link = try server.exchange("POST", "/links", body: body, headers: ["Authorization: Bearer admin-token"])
            #expect(link.status == 200, "\(link.text)")
        }
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')"))
        #expect(try page.evaluate("document.querySelector('[data-field=appUserId]')?.textContent") == .string(Self.hostileUser))
        #expect(try page.evaluate("document.querySelectorAll('#view img, #view script').length") == 0)
        #expect(try page.evaluate("document.title") == "entitlements")
        let encoded = Self.hostileUser.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        try page.evaluate("document.querySelector('[data-field=appUserId] a').click()")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('#view h2 [data-field=appUserId]')"))
        #expect(try page.evaluate("document.querySelector('#view h2 [data-field=appUserId]').textContent") == .string(Self.hostileUser))
        #expect(try page.evaluate("decodeURIComponent(location.hash) === decodeURIComponent('#/user/\(encoded)')") == true)

        try page.evaluate("location.hash = '#/customer/\(ServeSamples.customer(2))'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')?.textContent === '\(ServeSamples.customer(2))'"))
        #expect(try page.evaluate("document.querySelectorAll('[data-field=appUserId]').length") == 0)
    }

    /// Script that holds back, until the test releases them, the page's requests whose address
    /// contains `part`, counting them (`window.held`, `window.sent`); `fail` makes them fail
    /// as a network failure does once released.
    static func holdRequests(containing part: String, fail: Bool = false) -> String {
        """
        (() => {
          const real = window.unheldFetch || (window.unheldFetch = window.fetch);
          window.held = [];
          window.sent = 0;
          window.fetch = (url, init) => {
            if (!String(url).includes('\(part)')) return real(url, init);
            window.sent += 1;
            return new Promise((resolve, reject) => window.held.push(
              () => \(fail ? "reject(new TypeError('Failed to fetch'))" : "resolve(real(url, init))")));
          };
          window.release = () => { const held = window.held; window.held = []; held.forEach((go) => go()); return held.length; };
          return true;
        })()
        """
    }

    @Test("the Grant button is disabled while its request runs: a double click grants once; it is enabled again after a refusal, the focus on it")
    func grantButtonWhileItsRequestRuns() throws {
        let (server, customer) = try Self.serverWithACustomer()
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('form.grant')"))
        let button = "document.querySelector('form.grant button[type=submit]')"
        try page.evaluate(Self.holdRequests(containing: "/grants"))
        try page.evaluate("(b => { b.click(); b.click(); return true; })(\(button))")
        #expect(try page.wait(until: "window.sent >= 1"))
        #expect(try page.evaluate("\(button).disabled") == true)
        #expect(try page.evaluate("window.sent") == 1)
        #expect(try page.evaluate("window.release()") == 1)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant-state=active]')"))
        let started = try server.engine.lifecycle(since: 0, limit: 1000).map { $0.json() }.filter { $0["type"] == "GRANT_STARTED" }
        #expect(started.count == 1, "\(started)")
        #expect(try page.evaluate("\(button).disabled") == false)

        // Refused (the query token): the button is enabled again once the answer is said, and the keyboard is back on it.
        try page.evaluate("sessionStorage.setItem('entitlements.token', 'query-token')")
        try page.evaluate("location.hash = '#/webhooks'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('#view h2').textContent === 'Webhooks'"))
        try page.evaluate("location.hash = '#/customer/\(customer)'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('form.grant')"))
        try page.evaluate(Self.holdRequests(containing: "/grants"))
        try page.evaluate("\(button).focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "window.sent === 1"))
        #expect(try page.evaluate("\(button).disabled") == true)
        try page.press("Enter")
        #expect(try page.evaluate("window.sent") == 1)
        #expect(try page.evaluate("window.release()") == 1)
        #expect(try page.wait(until: "/admin token/.test(document.querySelector('form.grant').nextElementSibling.textContent)"))
        #expect(try page.evaluate("\(button).disabled") == false)
        #expect(try page.evaluate("document.activeElement === \(button)") == true)
    }

    @Test("a grant or a revocation the network fails says so, and its button can be pressed again")
    func operatorButtonsAfterANetworkFailure() throws {
        let (server, customer) = try Self.serverWithACustomer()
        let grantBody = JSONWriter.string(["id": "grant-1", "appTransactionId": .string(customer), "entitlement": "pro", "days": 7])
        #expect(try server.exchange("POST", "/grants", body: grantBody, headers: ["Authorization: Bearer admin-token"]).status == 200)
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant=grant-1]')"))
        let message = "document.querySelector('form.grant').nextElementSibling"

        try page.evaluate(Self.holdRequests(containing: "/revoke", fail: true))
        try page.evaluate("document.querySelector('button[data-revoke=grant-1]').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "window.sent === 1"))
        #expect(try page.evaluate("document.querySelector('button[data-revoke=grant-1]').disabled") == true)
        #expect(try page.evaluate("window.release()") == 1)
        #expect(try page.wait(until: "/could not be reached/.test(\(message).textContent)"))
        #expect(try page.evaluate("\(message).className") == "error")
        #expect(try page.evaluate("document.querySelector('button[data-revoke=grant-1]').disabled") == false)
        #expect(try page.evaluate("document.activeElement.getAttribute('data-revoke')") == "grant-1")

        try page.evaluate("\(message).textContent = ''")
        try page.evaluate(Self.holdRequests(containing: "/grants", fail: true))
        try page.evaluate("document.querySelector('form.grant button[type=submit]').click()")
        #expect(try page.wait(until: "window.sent === 1"))
        #expect(try page.evaluate("window.release()") == 1)
        #expect(try page.wait(until: "/could not be reached/.test(\(message).textContent)"))
        #expect(try page.evaluate("document.querySelector('form.grant button[type=submit]').disabled") == false)
        #expect(try page.evaluate("document.body.dataset.state") == "ready")
    }

    @Test("by keyboard alone: the skip link first, then the sections, the search box; every control is reachable")
    func keyboardOrder() throws {
        let server = try TestServer()
        let page = try ChromiumSession(width: 360, height: 800)
        try page.navigate("http://127.0.0.1:\(server.port)/#/")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready'"))
        // Focus back at the top of the document, as when the page was just opened.
        try page.evaluate(
            "(r => { r.setAttribute('tabindex', '-1'); r.focus(); r.removeAttribute('tabindex'); })(document.documentElement)")
        var reached: [String] = []
        for _ in 0..<8 {
            try page.press("Tab")
            if case .string(let label) = try page.evaluate(
                "(e => e.id || e.getAttribute('data-nav') || e.className || e.tagName)(document.activeElement)")
            {
                reached.append(label)
            }
        }
        #expect(reached.first == "skip", "\(reached)")
        for expected in ["overview", "webhooks", "rejections", "find-id"] { #expect(reached.contains(expected), "\(reached)") }
        // Nothing is wider than the 360 px screen but the tables, which scroll inside their region.
        #expect(try page.evaluate("document.documentElement.scrollWidth <= 360") == true)
    }
    @Test("the skip link moves the focus to the content and leaves the page, and its address, as they were")
    func skipLinkStaysOnThePage() throws {
        let server = try TestServer()
        let customer = ServeSamples.customer(1)
        #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(1)).json?["result"] == "appended")
        let page = try ChromiumSession()
        try page.navigate("http://127.0.0.1:\(server.port)/#/customer/\(customer)")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-field=appTransactionId]')"))
        try page.evaluate("document.querySelector('a.skip').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "document.activeElement.id === 'main'"))
        // Following the link's "#main" would have made the address name no page, and the page gone to the overview.
        #expect(try page.evaluate("location.hash") == .string("#/customer/\(customer)"))
        #expect(try page.evaluate("document.body.dataset.state") == "ready")
        #expect(try page.evaluate("document.querySelector('#view h2').textContent") == .string("Customer \(customer)"))
    }

    @Test("a page left while it loads draws nothing into the page opened after it")
    func leftPageDrawsNothing() throws {
        let server = try TestServer()
        let customer = ServeSamples.customer(1)
        #expect(try server.exchange("POST", "/notifications", body: ServeSamples.notification(1)).json?["result"] == "appended")
        let page = try ChromiumSession()
        try page.navigate("http://127.0.0.1:\(server.port)/#/webhooks")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready'"))
        // The customer's history is held back until the test lets it through; the lifecycle
        // feed, read after the timeline is drawn, is counted.
        try page.evaluate("""
            (() => {
              const real = window.fetch;
              window.heldRequests = [];
              window.lifecycleReads = 0;
              window.fetch = (url, init) => {
                if (String(url).includes('/history')) return new Promise((resolve) => window.heldRequests.push(() => resolve(real(url, init))));
                if (String(url).startsWith('/lifecycle')) window.lifecycleReads += 1;
                return real(url, init);
              };
              return true;
            })()
            """)
        try page.evaluate("location.hash = '#/customer/\(customer)'")
        #expect(try page.wait(until: "window.heldRequests.length === 1"))
        // Left for the rejections before its history came.
        try page.evaluate("location.hash = '#/rejections'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('#view h2').textContent === 'Rejected inputs'"))
        try page.evaluate("window.heldRequests.forEach((release) => release())")
        #expect(try page.wait(until: "window.lifecycleReads > 0"))
        #expect(try page.evaluate("Array.from(document.querySelectorAll('#view h2')).map((h) => h.textContent).join('|')") == "Rejected inputs")
        #expect(try page.evaluate("document.querySelectorAll('#view [data-timeline], #view [data-field=appTransactionId]').length") == 0)
        #expect(try page.evaluate("location.hash") == "#/rejections")
    }

    @Test("a grant or a revocation is said in the status line once the page is drawn again; a refused revocation keeps the focus on its button")
    func operatorActionsAnswerByKeyboard() throws {
        let (server, customer) = try Self.serverWithACustomer()
        let grantBody = JSONWriter.string(["id": "grant-1", "appTransactionId": .string(customer), "entitlement": "pro", "days": 7])
        let grant = try server.exchange("POST", "/grants", body: grantBody, headers: ["Authorization: Bearer admin-token"])
        #expect(grant.status == 200, "\(grant.text)")
        let page = try Self.customerPageWithTheAdminToken(server: server, customer: customer)
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant=grant-1]')"))
        try page.evaluate("document.querySelector('form.grant input[name=days]').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelectorAll('[data-grant-state=active]').length === 2"))
        let said = try page.evaluate("document.getElementById('status').textContent")
        #expect(try page.evaluate("/^Granted pro for 7 days \\(dashboard-/.test(document.getElementById('status').textContent)") == true, "\(said)")
        try page.evaluate("document.querySelector('button[data-revoke=grant-1]').focus()")
        try page.press("Enter")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('[data-grant=grant-1][data-grant-state=revoked]')"))
        #expect(try page.evaluate("document.getElementById('status').textContent") == "Revoked grant-1.")

        // The query token may not revoke: the page says so, and the keyboard stays on the button.
        try page.evaluate("sessionStorage.setItem('entitlements.token', 'query-token')")
        try page.evaluate("location.hash = '#/webhooks'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('#view h2').textContent === 'Webhooks'"))
        try page.evaluate("location.hash = '#/customer/\(customer)'")
        #expect(try page.wait(until: "document.body.dataset.state === 'ready' && document.querySelector('button[data-revoke]')"))
        try page.evaluate("document.querySelector('button[data-revoke]').focus()")
        let refused = try page.evaluate("document.activeElement.getAttribute('data-revoke')")
        try page.press("Enter")
        #expect(try page.wait(until: "/admin token/.test(document.querySelector('form.grant').nextElementSibling.textContent)"))
        #expect(try page.evaluate("document.activeElement.getAttribute('data-revoke')") == refused)
        #expect(try page.evaluate("document.activeElement.disabled") == false)
    }
}
