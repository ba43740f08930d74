@testable import Entitlements
import Testing

/// Batches appended are given back to the pipeline for a lane to release
/// (`IngestPipeline.giveBack`, `takeSpent`): each is handed out once, and none is kept
/// once the consumer stopped.
@Suite struct IngestPipelineSpentTests {
    static func batch(_ number: Int) -> IngestPipeline.Batch {
        ([InputBytes(bytes: Array("document \(number)".utf8), number: number)], Engine.VerifiedBatch(items: [], counts: [0]))
    }

    @Test("a batch given back is handed to one lane, once; after stop nothing is kept")
    func handedOutOnce() {
        let pipeline = IngestPipeline(inFlight: 4, lanes: 1)
        #expect(pipeline.takeSpent().isEmpty)
        pipeline.giveBack(Self.batch(1))
        pipeline.giveBack(Self.batch(2))
        let spent = pipeline.takeSpent()
        #expect(spent.map { $0.documents.compactMap(\.number) } == [[1], [2]])
        #expect(pipeline.takeSpent().isEmpty, "handed out once")
        pipeline.giveBack(Self.batch(3))
        pipeline.stop()
        pipeline.giveBack(Self.batch(4))
        #expect(pipeline.takeSpent().compactMap { $0.documents.first?.number } == [3])
        #expect(pipeline.takeSpent().isEmpty, "nothing kept once stopped")
    }
}
