import Foundation

/// The hand-over between the stages of ``Engine/ingest(batches:workers:receivedAt:deliver:)``:
/// batches numbered as they are read, verified on several lanes, taken in order.
final class IngestPipeline: @unchecked Sendable {
    typealias Batch = (documents: [InputBytes], verified: Engine.VerifiedBatch)
    private let condition = NSCondition()
    /// Held while a lane reads: one call of the source at a time, without holding `condition`.
    private let reading = NSLock()
    private var verified: [Int: Batch] = [:]
    private var nextToRead = 0
    private var nextToTake = 0
    private var inputEnded = false
    private var lanesRunning = 0
    /// Batches handed to lanes and not yet put back.
    private var verifying = 0
    private var stopped = false
    private let inFlight: Int
    /// Batches appended and given back (``giveBack(_:)``), for a lane to release.
    private var spent: [Batch] = []

    /// - Parameters:
    ///   - inFlight: the most batches read and not yet taken.
    ///   - lanes: how many lanes will call ``laneFinished()``.
    init(inFlight: Int, lanes: Int) {
        self.inFlight = inFlight
        self.lanesRunning = lanes
    }

    /// Lane: the next batch and its number, waiting while `inFlight` batches are read
    /// and not taken; `nil` when the input ended or the consumer stopped.
    func read(_ source: () -> [InputBytes]?) -> (Int, [InputBytes])? {
        reading.lock()
        defer { reading.unlock() }
        condition.lock()
        while nextToRead - nextToTake >= inFlight && !stopped { condition.wait() }
        let done = stopped || inputEnded
        condition.unlock()
        if done { return nil }
        guard let documents = source() else {
            condition.lock()
            inputEnded = true
            condition.broadcast()
            condition.unlock()
            return nil
        }
        condition.lock()
        defer { condition.unlock() }
        // Stopped while this lane read (a failed append): the batch is not verified.
        if stopped { return nil }
        let number = nextToRead
        nextToRead += 1
        verifying += 1
        return (number, documents)
    }

    /// Lane: the batch numbered `number`, verified.
    func put(_ number: Int, _ batch: Batch) {
        condition.lock()
        if !stopped { verified[number] = batch }
        verifying -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Lane: this lane reads no more.
    func laneFinished() {
        condition.lock()
        lanesRunning -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Consumer: the next batch in order, waiting for it; `nil` once the input
    /// ended and every batch read was taken.
    func take() -> Batch? {
        condition.lock()
        defer { condition.unlock() }
        while verified[nextToTake] == nil {
            // Every batch read has been taken, and none will be read: the end.
            if nextToTake == nextToRead && (inputEnded || lanesRunning == 0) { return nil }
            condition.wait()
        }
        let batch = verified.removeValue(forKey: nextToTake)!
        nextToTake += 1
        condition.broadcast()
        return batch
    }

    /// Consumer: `batch` is appended; a lane releases it (``takeSpent()``). What the
    /// lanes allocated (the documents, the payloads and their strings) is then freed on
    /// a lane, not on the appending thread whose pace is the ingest's.
    func giveBack(_ batch: Batch) {
        condition.lock()
        defer { condition.unlock() }
        if !stopped { spent.append(batch) }
    }

    /// Lane: the batches given back, to let go of outside the lock.
    func takeSpent() -> [Batch] {
        condition.lock()
        defer { condition.unlock() }
        defer { spent = [] }
        return spent
    }

    /// Consumer: no more batches are wanted; lanes end after the batch under way,
    /// which this waits for: when the caller then exits (a command that failed),
    /// no lane is still verifying while the process's libraries are torn down. A
    /// lane waiting for input is not waited for; it verifies nothing once it has it.
    func stop() {
        condition.lock()
        stopped = true
        verified.removeAll()
        condition.broadcast()
        while verifying > 0 { condition.wait() }
        condition.unlock()
    }
}
