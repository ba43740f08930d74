import Testing

/// The engine attacked the way production will attack it — killed, raced, fed
/// garbage, tampered with — and nothing lost.
///
/// Every reliability suite of the command line nests in this one, so
/// `swift test --filter Reliability` runs them all, one test at a time (they start
/// processes and share two cores), and never beside a serve suite (``OneAtATime``).
@Suite(.serialized, .oneAtATime)
enum Reliability {}
