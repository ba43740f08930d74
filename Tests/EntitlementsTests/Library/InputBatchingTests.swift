import Entitlements
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// How `ingest` cuts its input into batches (one transaction each): a file gives
/// full batches, a stream what has arrived, never waiting for more (a
/// file cut into the few lines one read returned would make thousands of commits).
@Suite struct InputBatchingTests {
    static func line(_ index: Int) -> String {
        "{\"signedPayload\":\"" + String(repeating: "A", count: 15_000 + index % 7) + "\"}"
    }

    @Test func aFileGivesFullBatches() throws {
        let path = Scenario.temporaryFolder("batching").appendingPathComponent("input.ndjson").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = (0..<1_000).map(Self.line).joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        guard var reader = InputReader(path: path, limit: 1 << 20) else { Issue.record("cannot open \(path)"); return }
        defer { reader.close() }
        var sizes: [Int] = []
        var numbers: [Int] = []
        while let batch = reader.nextBatch(maxLines: 256) {
            sizes.append(batch.count)
            numbers += batch.compactMap(\.number)
        }
        #expect(sizes == [256, 256, 256, 232])
        #expect(numbers == Array(1...1_000))
    }

    @Test func aStreamGivesWhatHasArrivedWithoutWaitingForMore() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(writeEnd) }
        func send(_ lines: [String]) {
            let bytes = Array((lines.joined(separator: "\n") + "\n").utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                #expect(written > 0)
                offset += max(written, 0)
            }
        }
        // Small lines, so that each write fits in the pipe at once.
        send(["{\"a\":1}", "{\"a\":2}", "{\"a\":3}"])
        // The pipe opened by name, as a FIFO or `/dev/stdin` would be (standard input itself is
        // left alone: tests that start processes run beside this one).
        guard var reader = InputReader(path: "/dev/fd/\(readEnd)", limit: 1 << 20) else {
            Issue.record("cannot open the pipe")
            return
        }
        defer { reader.close(); close(readEnd) }
        // Three lines arrived and the writer is still there: the batch is those three, now.
        let first = reader.nextBatch(maxLines: 512)
        #expect(first?.count == 3)
        send(["{\"a\":4}"])
        #expect(reader.nextBatch(maxLines: 512)?.compactMap(\.number) == [4])
    }
}
