/// The dashboard's files, compiled into the binary by scripts/embed-resources.sh from
/// Sources/EntitlementsServer/Dashboard/page: the page at `GET /`, the others at `GET /dashboard/{name}`.
enum DashboardAssets {
    /// One file of the page.
    struct Asset: Sendable {
        var name: String
        var text: String

        /// Its media type, from its extension.
        var contentType: String {
            if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
            if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
            if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
            if name.hasSuffix(".svg") { return "image/svg+xml" }
            return "application/octet-stream"
        }
    }

    /// The page served at `GET /`.
    static let pageName = "index.html"

    /// The embedded file named `name`, or `nil`.
    static func asset(named name: Substring) -> Asset? {
        embedded.first { $0.name == name }
    }
}
