import Testing

/// A trait for the suites whose tests start processes and servers and measure time and
/// memory (the `Reliability` suites of the command line's and the server's test targets):
/// each of their test cases runs while holding one lock shared by the whole test run, so
/// no two of them run at once even across test targets, as when they were one suite.
/// `.serialized` orders the tests within a suite; this orders them between suites.
package struct OneAtATime: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    /// A scope for each test case (a test function run, or one argument of a parameterized
    /// one); none for suites, which would hold the lock while their tests wait for it.
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> OneAtATime? {
        testCase == nil ? nil : self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.lock.acquire()
        do {
            try await function()
        } catch {
            await Self.lock.release()
            throw error
        }
        await Self.lock.release()
    }

    /// The lock, first come first served.
    actor Lock {
        private var held = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard held else {
                held = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
        }
    }

    static let lock = Lock()
}

extension Trait where Self == OneAtATime {
    /// Runs each test case of the suite while no other test marked so runs (``OneAtATime``).
    package static var oneAtATime: OneAtATime { OneAtATime() }
}
