import Testing

@testable import EntitlementsServer

/// The routes of specification section 9 read from a path, the customer's view first.
@Suite("Serve: routes")
struct RouteTests {
    @Test("/customers/{id}: one non-empty segment, percent-decoded; anything else is another route or none")
    func customer() {
        #expect(Route(path: "/customers/704000000000000001") == .customer("704000000000000001"))
        #expect(Route(path: "/customers/otid%3A2000") == .customer("otid:2000"))
        #expect(Route(path: "/customers/caf%C3%A9") == .customer("café"))
        #expect(Route(path: "/customers/704/history") == .history("704"))
        #expect(Route(path: "/customers") == .customerSearch)
        #expect(Route(path: "/customers/") == nil)
        #expect(Route(path: "/customers//history") == nil)
        #expect(Route(path: "/customers/a/b") == nil)
        #expect(Route(path: "/customers/%ZZ") == nil)
        #expect(Route(path: "/customers/%FF") == nil)
        #expect(Route(path: "/customersX/1") == nil)
        #expect(Route(path: "/health") == .health)
        #expect(Route(path: "/users/u%201") == .appUser("u 1"))
    }
}
