import Testing

/// `serve` attacked the way production will attack it: hostile requests, load, kill -9.
///
/// Every serve suite nests in this one, so `swift test --filter Reliability` runs them
/// with the command line's reliability suites, one test at a time across both targets
/// (``OneAtATime``: they start servers and processes and share two cores).
@Suite(.serialized, .oneAtATime)
enum Reliability {}
