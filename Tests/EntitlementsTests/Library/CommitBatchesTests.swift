import Entitlements
import Testing

/// The rule both group commits take waiting jobs by, and each job's part of the results.
@Suite struct CommitBatchesTests {
    @Test func wholeJobsInOrderWithinTheLimit() {
        #expect(CommitBatches.taken([3, 4, 2, 1], maxItems: 8) == (jobs: 2, items: 7))
        #expect(CommitBatches.taken([3, 4, 1, 5], maxItems: 8) == (jobs: 3, items: 8))
        // A later job that would fit is not taken past one that does not: the order is kept.
        #expect(CommitBatches.taken([6, 5, 1], maxItems: 8) == (jobs: 1, items: 6))
    }

    @Test func theFirstJobIsTakenWhateverItsSize() {
        #expect(CommitBatches.taken([12, 1], maxItems: 8) == (jobs: 1, items: 12))
        #expect(CommitBatches.taken([], maxItems: 8) == (jobs: 0, items: 0))
    }

    @Test func eachJobGetsItsOwnResultsInOrder() {
        #expect(CommitBatches.slices(Array(0..<7), sizes: [2, 0, 4, 1]) == [[0, 1], [], [2, 3, 4, 5], [6]])
        #expect(CommitBatches.slices([String](), sizes: []) == [])
    }
}
