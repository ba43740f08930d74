/// The signed samples that travel with the program, compiled into it (by
/// `scripts/embed-resources.sh`, from `Fixtures/demo` and `Fixtures/real`): the demo's
/// histories (made with the test PKI in `Fixtures/pki`) and real Apple-signed payloads.
/// Nothing is read from a resource bundle at run time.
public enum DemoFixtures {
    /// One embedded file.
    public struct File: Sendable, Equatable {
        /// Its path under `Fixtures/`, e.g. `demo/config.json`.
        public var path: String
        /// Its exact content.
        public var text: String

        public init(path: String, text: String) {
            self.path = path
            self.text = text
        }

        /// The file name without its folder.
        public var name: String { String(path.split(separator: "/").last ?? Substring(path)) }
    }

    /// Every embedded file, ordered by path.
    public static var files: [File] { embedded }

    /// The content of `Fixtures/<path>` (e.g. `demo/config.json`), or `nil` when it is not embedded.
    public static func text(_ path: String) -> String? { embedded.first { $0.path == path }?.text }

    /// The files of one folder (`demo` or `real`).
    public static func folder(_ name: String) -> [File] { embedded.filter { $0.path.hasPrefix(name + "/") } }
}
